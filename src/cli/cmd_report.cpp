// moeplan report SCENARIO|PLAN|SWEEP.csv -o F.html [--schedule NAME|all] [--set k=v]... [--threads N]
//                [--max-memory GIB] [--quiet]

#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/plan_reader.hpp>
#include <moeplan/output/sweep_csv.hpp>
#include <moeplan/plan/candidate_run.hpp>
#include <moeplan/plan/explain.hpp>
#include <moeplan/plan/planner.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/plan/simulate.hpp>
#include <moeplan/report/html_report.hpp>

#include "cli_context.hpp"
#include "scenario_support.hpp"

namespace moeplan::cli {
namespace {

struct ReportOptions {
  std::string input;
  std::string output;
  std::string schedule = "all";
  std::vector<std::string> sets;
  unsigned threads = 0;
  double max_memory_gib = 8;  // set by add_max_memory_option
  bool quiet = false;
  // Given on the command line (an option that cannot act on the input is refused).
  const CLI::Option* schedule_option = nullptr;
  const CLI::Option* set_option = nullptr;
  const CLI::Option* threads_option = nullptr;
  const CLI::Option* max_memory_option = nullptr;
  const CLI::Option* quiet_option = nullptr;
};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What kind of file the input is, when it is one we can tell (a bare scenario name resolves later).
std::optional<io::FileKind> input_kind(const std::string& input) {
  try {
    return io::detect_kind(io::resolve_any_path(input));
  } catch (const Error&) {
    return std::nullopt;  // load_scenario says what is wrong with it
  }
}

void refuse(const CLI::Option* option, const std::string& why) {
  if (option != nullptr && option->count() > 0)
    throw Error(ErrorKind::Input, fmt::format("{}: {}", option->get_name(), why));
}

void report_sweep(const ReportOptions& o, CliContext& context) {
  const std::string why = "a sweep's CSV holds finished runs; this option cannot act on it";
  for (const CLI::Option* option :
       {o.schedule_option, o.set_option, o.threads_option, o.max_memory_option, o.quiet_option})
    refuse(option, why);
  const output::SweepTable table = output::read_sweep_csv(o.input);
  const io::Json data = report::sweep_report_data(table, o.input);
  context.outputs.add(o.output, report::html_page(data, data.find("title")->as_string()));
  if (o.output != "-")
    context.out << fmt::format("wrote {}: sweep of {} rows, {} axes\n", o.output, table.rows.size(),
                               table.axes.size());
}

void report_plan(const ReportOptions& o, CliContext& context) {
  std::optional<model::PlanSpec> plan_file;
  std::optional<plan::ScenarioRun> run;
  if (input_kind(o.input) == io::FileKind::Plan) {
    refuse(o.schedule_option, "a plan file fixes its schedule; report its scenario to choose schedules");
    refuse(o.set_option, "a plan file fixes its scenario's overrides; report the scenario with --set instead");
    plan_file = io::load_plan(o.input);
    run.emplace(with_max_memory(io::load_plan_scenario(o.input), o.max_memory_gib));
  } else {
    run.emplace(with_max_memory(io::load_scenario(o.input, parse_overrides(o.sets)), o.max_memory_gib));
  }
  plan::refuse_noise(run->spec(), "report");
  plan::PlanRequest request;
  request.schedule = o.schedule;
  request.threads = thread_count(o.threads, context.err);
  std::unique_ptr<ProgressBar> bar = progress_bar("report", o.quiet, context.err);
  request.progress = bar.get();
  const plan::PlanResult result = plan::plan_scenario(*run, request);
  bar.reset();  // erase the bar before any note
  for (const std::string& note : result.notes) print_note(context.err, note);
  note_threads_started(result.threads, context.err);
  const plan::Explanation why = plan::explain(*run, result);
  // A plan file's knobs run as the request's (its degree as a --degree would):
  // what they fail on is the plan's field, in the plan file, not an option
  // this command was never given (issue 28).
  const plan::PlanRuns runs = [&] {
    try {
      return plan::run_plan_again(*run, result, plan_file);
    } catch (const Error& e) {
      if (!plan_file || e.kind() != ErrorKind::Input || e.field().rfind(kRequestField, 0) != 0) throw;
      throw Error(ErrorKind::Input, e.reason(), "knobs." + e.field().substr(kRequestField.size()),
                  SourceLocation{o.input});
    }
  }();
  const io::Json data = report::plan_report_data(run->spec(), result, why, runs, {o.input});
  context.outputs.add(o.output, report::html_page(data, data.find("title")->as_string()));
  if (o.output != "-")
    context.out << fmt::format("wrote {}: {} plan, {} at {:.3f} ms per iteration\n", o.output, result.family,
                               result.chosen.schedule, result.chosen.iteration_ms);
}

void run_report(const ReportOptions& o, CliContext& context) {
  if (ends_with(o.input, ".csv")) {
    report_sweep(o, context);
    return;
  }
  if (input_kind(o.input) == io::FileKind::Sweep)
    throw Error(ErrorKind::Input,
                fmt::format("{} is a sweep: run it first (moeplan sweep {} -o F.csv) and report the CSV",
                            quoted_for_error(o.input), o.input));
  report_plan(o, context);
}

}  // namespace

void add_report_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Write one self-contained HTML page of a scenario's plan, a plan file, or a sweep's CSV");
  cmd->add_option("input", o->input, "Scenario (bundled name or path), plan file, or a sweep's CSV (F.csv)")
      ->required();
  cmd->add_option("-o,--output", o->output, "The HTML file to write (- for stdout)")->required();
  o->schedule_option = cmd->add_option("--schedule", o->schedule, "The schedules to choose from; default all");
  o->set_option = cmd->add_option("--set", o->sets, "Override a scalar field: field.path=value (repeatable)");
  add_threads_option(cmd, o->threads);
  o->threads_option = cmd->get_option("--threads");
  add_max_memory_option(cmd, o->max_memory_gib);
  o->max_memory_option = cmd->get_option("--max-memory");
  add_quiet_option(cmd, o->quiet);
  o->quiet_option = cmd->get_option("--quiet");
  cmd->callback([o, &context] { run_report(*o, context); });
}

}  // namespace moeplan::cli
