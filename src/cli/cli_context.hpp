#pragma once
// What the thin CLI layer shares between commands: where output goes, and the
// helpers that turn library results into the CLI.md output conventions.

#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <moeplan/io/loader.hpp>

namespace moeplan::cli {

/// @brief Streams a command writes to, and its exit status.
struct CliContext {
  std::ostream& out;
  std::ostream& err;
  int exit_code = 0;
};

void add_validate_command(CLI::App& app, CliContext& context);
void add_cost_command(CLI::App& app, CliContext& context);
void add_bench_command(CLI::App& app, CliContext& context);
void add_simulate_command(CLI::App& app, CliContext& context);
void add_plan_command(CLI::App& app, CliContext& context);
void add_sweep_command(CLI::App& app, CliContext& context);
void add_mappings_command(CLI::App& app, CliContext& context);
/// fit, and datasheet-profile.
void add_fit_command(CLI::App& app, CliContext& context);

/// The one rule for sizes, counts and degrees given on the command line: zero
/// and negative values are errors ("--group: must be positive, got 0"), never
/// a silent "default" (issue 13, item 9).
const CLI::Validator& positive();
/// For quantities where zero is a real question, not a default (cost --size 0: the latency term).
const CLI::Validator& non_negative();

/// Parses repeated --set values.
std::vector<io::Override> parse_overrides(const std::vector<std::string>& values);

}  // namespace moeplan::cli
