#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {

std::vector<io::Override> parse_overrides(const std::vector<std::string>& values) {
  std::vector<io::Override> overrides;
  for (const std::string& v : values) overrides.push_back(io::parse_override(v));
  return overrides;
}

const CLI::Validator& positive() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(value)) return fmt::format("expected a number, got '{}'", text);
        if (value <= 0) return fmt::format("must be positive, got {}", text);
        return "";
      },
      "> 0");
  return v;
}

const CLI::Validator& non_negative() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(value)) return fmt::format("expected a number, got '{}'", text);
        if (value < 0) return fmt::format("must not be negative, got {}", text);
        return "";
      },
      ">= 0");
  return v;
}

}  // namespace moeplan::cli
