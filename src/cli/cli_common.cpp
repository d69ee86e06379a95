#include <fmt/format.h>

#include <moeplan/core/error.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {

std::vector<io::Override> parse_overrides(const std::vector<std::string>& values) {
  std::vector<io::Override> overrides;
  for (const std::string& v : values) overrides.push_back(io::parse_override(v));
  return overrides;
}

}  // namespace moeplan::cli
