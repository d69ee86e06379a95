// libFuzzer target: io::Json::parse. Whatever it accepts must survive a round
// trip: dump() (indented and compact) parses again to the same value, and
// dumping that gives the same text.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>

#include <moeplan/io/json.hpp>

#include "fuzz_support.hpp"

namespace {

using moeplan::io::Json;

// Numbers compare by value: 1.0 is written "1" and reads back as an integer.
bool same(const Json& a, const Json& b) {
  if (a.is_null() || b.is_null()) return a.is_null() && b.is_null();
  if (a.is_bool()) return b.is_bool() && a.as_bool() == b.as_bool();
  if (a.is_number()) return b.is_number() && a.as_number() == b.as_number();
  if (a.is_string()) return b.is_string() && a.as_string() == b.as_string();
  if (a.is_array()) {
    if (!b.is_array() || a.as_array().size() != b.as_array().size()) return false;
    for (std::size_t i = 0; i < a.as_array().size(); ++i)
      if (!same(a.as_array()[i], b.as_array()[i])) return false;
    return true;
  }
  if (!b.is_object() || a.as_object().size() != b.as_object().size()) return false;
  for (std::size_t i = 0; i < a.as_object().size(); ++i) {
    const auto& [key_a, value_a] = a.as_object()[i];
    const auto& [key_b, value_b] = b.as_object()[i];
    if (key_a != key_b || !same(value_a, value_b)) return false;
  }
  return true;
}

void check_round_trip(const Json& value, int indent) {
  const std::string text = value.dump(indent);
  const Json back = Json::parse(text);  // an Error here escapes: dump() wrote what parse() refuses
  if (!same(value, back) || back.dump(indent) != text) {
    fmt::print(stderr, "moeplan fuzz: JSON round trip changed the value; dump({}):\n{}\n", indent, text);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<Json> value;
  moeplan::fuzz::expect_input_errors_only([&] { value = Json::parse(text); });
  if (!value) return 0;
  check_round_trip(*value, 2);
  check_round_trip(*value, 0);
  return 0;
}
