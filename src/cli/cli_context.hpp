#pragma once
// What the thin CLI layer shares between commands: where output goes, and the
// helpers that turn library results into the CLI.md output conventions.

#include <iosfwd>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/number_options.hpp>
#include <moeplan/io/output_set.hpp>

namespace moeplan::cli {

/// @brief Where a command writes, and its exit status. `out` is the report
/// (text or --json) that main prints once the command has succeeded, with the
/// files the command staged in `outputs`: all appear, or none (docs/cli.md,
/// "Output files").
struct CliContext {
  std::ostream& out;
  std::ostream& err;
  io::OutputSet& outputs;
  int exit_code = 0;
};

void add_validate_command(CLI::App& app, CliContext& context);
void add_cost_command(CLI::App& app, CliContext& context);
void add_bench_command(CLI::App& app, CliContext& context);
void add_simulate_command(CLI::App& app, CliContext& context);
void add_plan_command(CLI::App& app, CliContext& context);
void add_sweep_command(CLI::App& app, CliContext& context);
void add_mappings_command(CLI::App& app, CliContext& context);
void add_calibrate_command(CLI::App& app, CliContext& context);
void add_execute_command(CLI::App& app, CliContext& context);
void add_validate_hw_command(CLI::App& app, CliContext& context);
void add_import_hf_command(CLI::App& app, CliContext& context);
void add_capacity_command(CLI::App& app, CliContext& context);
void add_report_command(CLI::App& app, CliContext& context);
/// fit, and datasheet-profile.
void add_fit_command(CLI::App& app, CliContext& context);
/// export-chakra and import-chakra.
void add_chakra_commands(CLI::App& app, CliContext& context);

/// The flag of a request option the library names by its field
/// ("request.cost_per_gpu_hour" -> "--cost-per-gpu-hour"): the one place where
/// the library's option fields meet the command line's spelling.
std::string flag_of(std::string_view field);

/// The one rule for numbers given on the command line: each numeric option is
/// a row of io/number_options.hpp's table, spelled flag_of(field), and read by
/// io::parse_number (decimal, finite, within its range; an input error naming
/// the flag otherwise, exit 2). Zero and negative values are errors where the
/// range says so, never a silent "default" (issue 13 item 9, issue 28).
template <typename T>
CLI::Option* add_number_option(CLI::App* command, std::string_view field, T& target, const std::string& help) {
  const io::NumberOption& option = io::number_option(field);
  const std::string name(field);
  CLI::Option* added = command->add_option_function<std::string>(
      flag_of(field),
      [&target, name](const std::string& text) {
        if constexpr (std::is_floating_point_v<T>) {
          target = io::parse_number(name, text);
        } else if constexpr (std::is_integral_v<T>) {
          target = static_cast<T>(io::parse_integer(name, text));
        } else if constexpr (std::is_floating_point_v<typename T::value_type>) {
          target = io::parse_number(name, text);
        } else {
          target = static_cast<typename T::value_type>(io::parse_integer(name, text));
        }
      },
      help);
  added->type_name(fmt::format("{}:{}", option.integer ? "INT" : "NUMBER", io::range_text(option)));
  return added;
}

/// An output path "-" is standard output, which then carries that output
/// alone: with --json, or with a second "-", it is a usage error naming the
/// option. options: (option name, path given; empty when not given).
void check_stdout_outputs(bool json, const std::vector<std::pair<std::string, std::string>>& options);

/// Every option of every command that takes a value takes a non-empty one, in
/// UTF-8: an empty value was read as "not given" by some (-o '', --profile ''),
/// and reached an internal check in others (issue 28). Each refusal names the
/// option (exit 2) before any command runs.
void check_option_text(CLI::App& app);

/// The name of the cluster --cluster gives (a bundled name or a cluster file),
/// for a profile that prices it: an input error naming --cluster otherwise.
std::string cluster_name_of(const std::string& given);

/// Text typed on the command line that ends up in an output (a profile's
/// --name or --cluster) must be UTF-8, as strings in input files must: an
/// input error naming the option otherwise.
void check_utf8_option(const std::string& option, const std::string& value);

/// The one line a failed command writes on stderr ("moeplan: error: ..."),
/// and its exit code: 1 for a runtime failure, 2 for bad input or usage.
void report_error(std::ostream& err, const Error& e);
int exit_code_of(const Error& e);

/// Parses repeated --set values.
std::vector<io::Override> parse_overrides(const std::vector<std::string>& values);

}  // namespace moeplan::cli
