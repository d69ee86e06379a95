#pragma once
// A small JSON value with deterministic output: object keys keep insertion
// order, doubles print in shortest round-trip form, non-finite numbers as null.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace moeplan::io {

/// @brief A JSON document built in code and written with dump().
class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() : value_(nullptr) {}
  Json(std::nullptr_t) : value_(nullptr) {}
  Json(bool v) : value_(v) {}
  Json(int v) : value_(static_cast<std::int64_t>(v)) {}
  Json(std::int64_t v) : value_(v) {}
  Json(double v) : value_(v) {}
  Json(const char* v) : value_(std::string(v)) {}
  Json(std::string v) : value_(std::move(v)) {}
  Json(Array v) : value_(std::move(v)) {}
  Json(Object v) : value_(std::move(v)) {}

  static Json array() { return Json(Array{}); }
  static Json object() { return Json(Object{}); }

  /// Appends to an array.
  Json& push(Json value);
  /// Sets a key of an object (replacing an earlier value of that key).
  Json& set(const std::string& key, Json value);

  std::string dump(int indent = 2) const;

  /// Parses a JSON document (RFC 8259); an error throws an input Error naming the offset.
  static Json parse(const std::string& text);

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(value_); }
  bool is_object() const { return std::holds_alternative<Object>(value_); }
  bool is_array() const { return std::holds_alternative<Array>(value_); }
  bool is_string() const { return std::holds_alternative<std::string>(value_); }
  bool is_number() const {
    return std::holds_alternative<double>(value_) || std::holds_alternative<std::int64_t>(value_);
  }
  bool is_bool() const { return std::holds_alternative<bool>(value_); }
  /// Member of an object, or nullptr.
  const Json* find(const std::string& key) const;
  const Array& as_array() const;
  const Object& as_object() const;
  const std::string& as_string() const;
  double as_number() const;
  bool as_bool() const;

 private:
  void write(std::string& out, int indent, int depth) const;
  std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object> value_;
};

/// JSON string escaping (quotes included).
std::string json_quote(const std::string& text);

}  // namespace moeplan::io
