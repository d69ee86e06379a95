#pragma once
// A small JSON value with deterministic output: object keys keep insertion
// order, doubles print in shortest round-trip form, non-finite numbers as null.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace moeplan::io {

/// The most values (object members and array elements, nested ones included,
/// the document itself too) one parsed document may hold: 8,388,608, at about
/// 40 bytes each a third of a GiB, so that a large file is refused while it is
/// read rather than met as std::bad_alloc. The documents moeplan reads hold far
/// fewer: a config.json some hundred, a comm_groups.json a group per process
/// group and a value per member rank (docs/reliability.md, "Resource bounds").
inline constexpr std::size_t kMaxJsonValues = std::size_t{1} << 23;

/// @brief A JSON document built in code and written with dump().
class Json {
 public:
  using Array = std::vector<Json>;

  /// @brief An object's members in the order written; past a few members an
  /// index by key, so that adding and finding a key stay O(1) in large objects.
  class Object {
   public:
    using Member = std::pair<std::string, Json>;
    using const_iterator = std::vector<Member>::const_iterator;

    Object();
    Object(const Object& other);
    Object(Object&& other) noexcept;
    Object& operator=(const Object& other);
    Object& operator=(Object&& other) noexcept;
    ~Object();

    const_iterator begin() const { return members_.begin(); }
    const_iterator end() const { return members_.end(); }
    std::size_t size() const { return members_.size(); }
    bool empty() const { return members_.empty(); }
    const Member& operator[](std::size_t i) const { return members_[i]; }
    /// The value of key, or nullptr.
    const Json* find(const std::string& key) const;
    /// Adds key, or replaces the value of a key already there (which keeps its place).
    void set(const std::string& key, Json value);

   private:
    std::size_t position(const std::string& key) const;  // members_.size() when absent
    void index(std::size_t member);
    void rebuild_index(std::size_t slots);
    std::vector<Member> members_;
    // Open addressing over members_: 1 + a member's position, 0 for a free
    // slot; a power of two in size, at most half full. None while a scan of
    // the few keys is as fast; behind a pointer, so that every JSON value
    // stays 40 bytes (kMaxJsonValues counts them).
    std::unique_ptr<std::vector<std::uint32_t>> slots_;
  };

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

  /// Parses a JSON document (RFC 8259). An error throws an input Error located
  /// at its line and column (1-based, in bytes) of `path`; so does the value
  /// past `max_values`. A key written twice keeps its first place and takes
  /// its last value, as Python's json module reads it.
  static Json parse(const std::string& text, const std::string& path = "", std::size_t max_values = kMaxJsonValues);

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
