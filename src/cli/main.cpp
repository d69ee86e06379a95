// The moeplan command line (reference: docs/cli.md). Thin: parse arguments,
// call the library, print, map errors to exit codes (2 input/usage, 1 runtime).

#include <iostream>

#include <google/protobuf/stubs/logging.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/version.hpp>

#include "cli_context.hpp"

namespace {

// Protobuf reports through our error collectors; its own logger must not add
// lines to stderr.
void silence_protobuf_log(google::protobuf::LogLevel, const char*, int, const std::string&) {}

int run(int argc, char** argv) {
  using moeplan::cli::CliContext;
  CliContext context{std::cout, std::cerr};
  CLI::App app{"moeplan: plan and simulate communication/computation overlap in distributed MoE training", "moeplan"};
  app.set_version_flag("--version", std::string("moeplan ") + moeplan::kVersion);
  app.require_subcommand(1);
  moeplan::cli::add_validate_command(app, context);
  moeplan::cli::add_cost_command(app, context);
  moeplan::cli::add_fit_command(app, context);
  moeplan::cli::add_simulate_command(app, context);
  moeplan::cli::add_plan_command(app, context);
  moeplan::cli::add_sweep_command(app, context);
  moeplan::cli::add_mappings_command(app, context);
  moeplan::cli::add_bench_command(app, context);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    std::cerr << "moeplan: error: " << e.what() << '\n';
    return 2;
  }
  return context.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  google::protobuf::SetLogHandler(&silence_protobuf_log);
  try {
    return run(argc, argv);
  } catch (const moeplan::Error& e) {
    std::cerr << "moeplan: error: " << moeplan::format_error(e) << '\n';
    return e.kind() == moeplan::ErrorKind::Input ? 2 : 1;
  } catch (const std::exception& e) {
    std::cerr << "moeplan: error: " << e.what() << '\n';
    return 1;
  }
}
