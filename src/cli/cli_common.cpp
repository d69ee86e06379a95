#include <fmt/format.h>

#include <moeplan/core/error.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {

void add_unavailable_command(CLI::App& app, CliContext&, const std::string& name, const std::string& description) {
  CLI::App* cmd = app.add_subcommand(name, description + " (not available yet)");
  cmd->allow_extras();
  cmd->callback([name] { throw Error(ErrorKind::Input, fmt::format("'{}' is not available yet", name)); });
}

std::vector<io::Override> parse_overrides(const std::vector<std::string>& values) {
  std::vector<io::Override> overrides;
  for (const std::string& v : values) overrides.push_back(io::parse_override(v));
  return overrides;
}

}  // namespace moeplan::cli
