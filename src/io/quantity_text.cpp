#include <moeplan/io/quantity_text.hpp>

#include <cmath>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::io {
namespace {

// A positive integer of the whole text (no sign, no spaces).
std::optional<std::int64_t> whole_number(const std::string& text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const std::int64_t v = std::stoll(text);
  return v > 0 ? std::optional<std::int64_t>(v) : std::nullopt;
}

}  // namespace

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
  char* end = nullptr;
  const double value = number.empty() ? 0.0 : std::strtod(number.c_str(), &end);
  if (number.empty() || end == nullptr || *end != '\0' || !std::isfinite(value * scale) || !(value > 0))
    throw Error(ErrorKind::Input,
                fmt::format("expected a positive token count such as 2T, 500B or 3e11, got {}", quoted_for_error(text)),
                field);
  return value * scale;
}

std::pair<std::int64_t, std::int64_t> parse_count_range(const std::string& text, const std::string& field) {
  const std::size_t dots = text.find("..");
  const std::optional<std::int64_t> lo = whole_number(dots == std::string::npos ? text : text.substr(0, dots));
  const std::optional<std::int64_t> hi = dots == std::string::npos ? lo : whole_number(text.substr(dots + 2));
  if (!lo || !hi || *hi < *lo)
    throw Error(ErrorKind::Input,
                fmt::format("expected a count N or a range LO..HI of positive counts (LO <= HI), got {}",
                            quoted_for_error(text)),
                field);
  return {*lo, *hi};
}

}  // namespace moeplan::io
