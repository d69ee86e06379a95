// The moeplan command line (reference: docs/cli.md). Thin: parse arguments,
// call the library, print, map errors to exit codes (2 input/usage, 1 runtime).

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <new>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include <google/protobuf/stubs/logging.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/version.hpp>
#include <moeplan/family/builtin.hpp>
#include <moeplan/io/output_set.hpp>
#include <moeplan/io/temporary_files.hpp>

#include "cli_context.hpp"

namespace {

// Protobuf reports through our error collectors; its own logger must not add
// lines to stderr.
void silence_protobuf_log(google::protobuf::LogLevel, const char*, int, const std::string&) {}

// A standard stream the caller closed (`>&-`) stays unusable, but its number
// must not go to a file moeplan opens: the report would land in an output's
// temporary. /dev/null opened read-only holds the number and fails every
// write, so a closed stdout is a failed write (exit 1), as docs/cli.md says.
void hold_closed_standard_streams() {
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd)
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) ::open("/dev/null", O_RDONLY);  // takes the lowest free number: fd
}

int run(int argc, char** argv) {
  using moeplan::cli::CliContext;
  // The report is held until the command has succeeded, then written with the
  // staged files (OutputSet::commit): a failed command prints no partial report.
  moeplan::io::OutputSet outputs;
  std::ostringstream report;
  CliContext context{report, std::cerr, outputs};
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
  moeplan::cli::add_calibrate_command(app, context);
  moeplan::cli::add_execute_command(app, context);
  moeplan::cli::add_validate_hw_command(app, context);
  moeplan::cli::add_chakra_commands(app, context);
  moeplan::cli::add_import_hf_command(app, context);
  moeplan::cli::add_capacity_command(app, context);
  moeplan::cli::add_report_command(app, context);
  moeplan::cli::check_option_text(app);
  // The command comes first (the only top-level options are --help and
  // --version): a word that names none is said to be unknown, with the list,
  // where CLI11 would say "A subcommand is required".
  std::string commands;
  bool known = false;
  const std::string first = argc > 1 ? argv[1] : "";
  for (const CLI::App* sub : std::as_const(app).get_subcommands([](const CLI::App*) { return true; })) {
    commands += (commands.empty() ? "" : ", ") + sub->get_name();
    known = known || sub->check_name(first);
  }
  if (argc < 2 || (!known && first.rfind('-', 0) != 0)) {
    std::cerr << "moeplan: error: "
              << (argc < 2
                      ? fmt::format("no command given (commands: {}); moeplan --help says what each does", commands)
                      : fmt::format("unknown command {} (commands: {})", moeplan::quoted_for_error(first), commands))
              << '\n';
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    // CLI11 quotes arguments whole: a long one is cut as every quoted value is.
    std::string message = e.what();
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg.size() <= moeplan::kQuotedForErrorMax) continue;
      const std::string cut = moeplan::quoted_for_error(arg);
      for (std::size_t at = message.find(arg); at != std::string::npos; at = message.find(arg, at + cut.size()))
        message.replace(at, arg.size(), cut);
    }
    std::cerr << "moeplan: error: " << message << '\n';
    return 2;
  }
  // Standard output carries the report, unless an output ("-o -") took it.
  if (!outputs.writes_stdout()) outputs.add("-", report.str());
  outputs.commit();
  return context.exit_code;
}

// Runs the command; a failure is one line on stderr and exit 2 (input) or 1.
int run_reporting_errors(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const moeplan::Error& e) {
    moeplan::cli::report_error(std::cerr, e);
    return moeplan::cli::exit_code_of(e);
  } catch (const std::bad_alloc&) {
    // Every input's size is bounded before work (docs/reliability.md,
    // "Resource bounds"); an allocation that still fails is this machine's
    // memory, said as such rather than as "std::bad_alloc".
    std::cerr << "moeplan: error: out of memory: the machine could not give the memory this command needs\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "moeplan: error: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  hold_closed_standard_streams();
  moeplan::family::register_builtin_families();
  moeplan::io::remove_temporaries_on_signal();
  google::protobuf::SetLogHandler(&silence_protobuf_log);
  int status = run_reporting_errors(argc, argv);
  // What went through std::cout (--help, --version) must have arrived too.
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "moeplan: error: standard output: cannot write\n";
    status = 1;
  }
  // A lost error or note cannot be reported, but the run must not claim success.
  std::cerr.flush();
  if (!std::cerr && status == 0) status = 1;
  return status;
}
