// moeplan plan SCENARIO [--schedule NAME|all] [--set k=v]... [-o PLAN] [--json] [--joint]

#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/plan_writer.hpp>
#include <moeplan/output/plan_report.hpp>
#include <moeplan/plan/explain.hpp>
#include <moeplan/plan/joint.hpp>
#include <moeplan/plan/planner.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/plan/simulate.hpp>

#include "cli_context.hpp"
#include "scenario_support.hpp"

namespace moeplan::cli {
namespace {

struct PlanOptions {
  std::string scenario;
  std::string schedule = "all";
  std::vector<std::string> sets;
  std::string output;
  unsigned threads = 0;
  double max_memory_gib = 8;  // set by add_max_memory_option
  bool json = false;
  std::string emit;  // megatron or knobs
  bool quiet = false;
  bool joint = false;  // the joint mapping x overlap search (issue 17 item 3)
};

// What the plan file carries besides the choice: how to rebuild the run
// (io/plan_reader.hpp), so that `simulate PLAN` reproduces it.
void write_plan_file(const PlanOptions& o, model::PlanSpec spec, CliContext& context) {
  if (o.output.empty()) return;
  spec.scenario_ref = o.scenario;
  spec.scenario_overrides = o.sets;
  const bool as_json = o.output.size() >= 5 && o.output.compare(o.output.size() - 5, 5, ".json") == 0;
  context.outputs.add(o.output, as_json ? io::plan_spec_to_json(spec).dump() + "\n" : io::plan_to_textproto(spec));
}

void run_plan(const PlanOptions& o, CliContext& context) {
  check_stdout_outputs(o.json, {{"-o", o.output}});
  if (!o.emit.empty() && o.json)
    throw Error(ErrorKind::Input, "--emit: prints the plan's flags instead of the report; drop --json or --emit");
  const plan::ScenarioRun run(with_max_memory(io::load_scenario(o.scenario, parse_overrides(o.sets)), o.max_memory_gib));
  plan::refuse_noise(run.spec(), "plan");
  if (o.joint && !o.output.empty())
    throw Error(ErrorKind::Input,
                "-o: a joint plan cannot be written as a plan file yet (simulate PLAN would price its mapping without "
                "the overlap); drop -o, or plan without --joint");
  // The scenario fixes the mapping (unless its family searches mappings): say
  // when it does not fit its GPU's memory, or fits by less than the memory
  // model's error (docs/cost-model.md, "Memory"): simulate's note.
  if (!run.family().searches_mappings())
    if (const std::string note = run.memory_note(); !note.empty()) print_note(context.err, note);
  plan::PlanRequest request;
  request.schedule = o.schedule;
  request.threads = thread_count(o.threads, context.err);
  std::unique_ptr<ProgressBar> bar = progress_bar("plan", o.quiet, context.err);
  request.progress = bar.get();
  const plan::PlanResult result = o.joint ? plan::plan_joint(run, request) : plan::plan_scenario(run, request);
  bar.reset();  // erase the bar before any note or result
  for (const std::string& note : result.notes) print_note(context.err, note);
  note_threads_started(result.threads, context.err);
  write_plan_file(o, plan::plan_spec(result), context);
  if (!o.emit.empty()) {
    context.out << plan::emit_plan(result, run.spec(), o.emit);
    return;
  }
  const plan::Explanation why = plan::explain(run, result);
  if (o.json) {
    context.out << output::plan_to_json(result, &why).dump() << '\n';
    return;
  }
  context.out << output::plan_to_text(result, &why);
  if (!o.output.empty()) context.out << "  wrote " << o.output << '\n';
}

}  // namespace

void add_plan_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "Search the scenario's open knobs and write the best plan");
  cmd->add_option("scenario", o->scenario, "Scenario (bundled name or path)")->required();
  cmd->add_option("--schedule", o->schedule, "A schedule name, or all (default)");
  cmd->add_option("--set", o->sets, "Override a scalar field: field.path=value (repeatable)");
  cmd->add_option("-o,--output", o->output, "Write the plan (text format, or JSON for a .json name; - for stdout)");
  add_threads_option(cmd, o->threads);
  add_quiet_option(cmd, o->quiet);
  add_max_memory_option(cmd, o->max_memory_gib);
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->add_flag("--joint", o->joint,
                "Folding scenarios: search every mapping with every overlap family's schedules (the joint search)");
  cmd->add_option("--emit", o->emit,
                  "Print the chosen plan as its system takes it: megatron (folding: Megatron-LM arguments) or knobs "
                  "(foldmoe, fsmoe, flowmoe: key=value)")
      ->check(CLI::IsMember({"megatron", "knobs"}));
  cmd->callback([o, &context] { run_plan(*o, context); });
}

}  // namespace moeplan::cli
