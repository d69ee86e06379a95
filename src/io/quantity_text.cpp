#include <moeplan/io/quantity_text.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/number_options.hpp>

namespace moeplan::io {

double parse_token_count(const std::string& text, const std::string& field) {
  double scale = 1;
  std::string number = text;
  if (!number.empty()) {
    switch (number.back()) {
      case 'K': case 'k': scale = 1e3; break;
      case 'M': case 'm': scale = 1e6; break;
      case 'B': case 'b': case 'G': case 'g': scale = 1e9; break;
      case 'T': case 't': scale = 1e12; break;
      default: break;
    }
    if (scale != 1) number.pop_back();
  }
  // The number before the unit is read as every numeric option is (decimal,
  // finite), and the count it makes is held to the option's range.
  return parse_scaled_number(field, number, scale);
}

std::pair<std::int64_t, std::int64_t> parse_count_range(const std::string& text, const std::string& field) {
  const std::size_t dots = text.find("..");
  const std::int64_t lo = parse_integer(field, dots == std::string::npos ? text : text.substr(0, dots));
  const std::int64_t hi = dots == std::string::npos ? lo : parse_integer(field, text.substr(dots + 2));
  if (hi < lo)
    throw Error(ErrorKind::Input,
                fmt::format("a range LO..HI needs LO <= HI, got {}", quoted_for_error(text)), field);
  return {lo, hi};
}

}  // namespace moeplan::io
