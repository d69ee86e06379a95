// moeplan simulate SCENARIO [--schedule NAME|all] [--degree N] [--set k=v]...
//                  [--trace F.json] [--svg F.svg] [--json]

#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/atomic_file.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/timeline_writer.hpp>
#include <moeplan/plan/folding.hpp>

#include "cli_context.hpp"
#include "scenario_support.hpp"

namespace moeplan::cli {
namespace {

struct SimulateOptions {
  std::string scenario;
  std::string schedule;
  std::int64_t degree = 0;
  std::vector<std::string> sets;
  std::string trace;
  std::string svg;
  bool json = false;
};

// With several schedules, "out.json" becomes "out.<schedule>.json".
std::string output_name(const std::string& path, const std::string& schedule, bool several) {
  if (!several) return path;
  const std::size_t dot = path.rfind('.');
  const std::size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + schedule;
  return path.substr(0, dot) + "." + schedule + path.substr(dot);
}

// A folding scenario: its own mapping, priced as the planner prices every mapping.
void run_folding_simulate(const SimulateOptions& o, const RunnableScenario& run, CliContext& context) {
  const plan::FoldingResult r = plan::price_mapping(
      run.spec, *run.costs, plan::FoldingConfig::from(run.spec.parallel, run.spec.workload.micro_batch_size));
  io::Json j = io::Json::object();
  j.set("scenario", run.spec.name);
  j.set("schedule", "1f1b");
  j.set("degree", r.config.pp);
  j.set("iteration_ms", r.iteration_ms);
  j.set("mfu", r.mfu);
  j.set("memory_bytes_per_gpu", r.memory_bytes_per_gpu);
  j.set("fits", r.fits);
  j.set("bubble_ms", r.breakdown.pp_bubble_ms);
  if (o.json) {
    context.out << j.dump() << '\n';
    return;
  }
  context.out << fmt::format("{}: {:.1f} ms per iteration, MFU {:.1f}%, {:.1f} GiB per GPU{}\n", run.spec.name,
                             r.iteration_ms, 100 * r.mfu, r.memory_bytes_per_gpu / (1024.0 * 1024 * 1024),
                             r.fits ? "" : " (does not fit)");
}

void run_simulate(const SimulateOptions& o, CliContext& context) {
  const RunnableScenario run = load_runnable(o.scenario, o.sets);
  if (run.spec.schedule.family == "folding") {
    run_folding_simulate(o, run, context);
    return;
  }
  const std::string requested = o.schedule.empty() ? run.spec.schedule.name : o.schedule;
  const std::vector<std::string> schedules = chosen_schedules(run.spec, requested);
  // Degree: --degree, else the scenario's; otherwise FoldMoE uses 4 (its search
  // covers 2..16) and FSMoE its planned per-phase degrees.
  if (o.degree < 0) throw Error(ErrorKind::Input, "--degree: must be positive");
  const std::int64_t degree = o.degree > 0 ? o.degree : run.spec.schedule.degree.value_or(0);
  std::vector<io::Json> results;
  for (const std::string& schedule : schedules) {
    const sched::BuiltSchedule built = build_schedule(run, schedule, degree);
    const sim::Timeline timeline = sim::simulate(built.graph);
    const plan::Evaluation e = plan::evaluate(built, timeline);
    const bool several = schedules.size() > 1;
    if (!o.trace.empty())
      io::write_file_atomic(output_name(o.trace, schedule, several),
                            io::ChromeTraceWriter().write(built.graph, timeline));
    if (!o.svg.empty())
      io::write_file_atomic(output_name(o.svg, schedule, several), io::SvgGanttWriter().write(built.graph, timeline));
    results.push_back(evaluation_to_json(run.spec.name, e));
    if (!o.json)
      context.out << fmt::format(
          "{:<14} d={:<3} iteration {:9.3f} ms  forward {:9.3f}  backward {:9.3f}  exposed comm "
          "{:8.3f}  bubbles {:8.3f}  tasks {}\n",
          e.schedule, e.degree, e.iteration_ms, e.forward_ms, e.backward_ms, e.exposed_comm_ms, e.bubble_ms, e.tasks);
  }
  if (o.json) {
    // One object for one schedule; an array for --schedule all (CLI.md).
    if (requested != "all")
      context.out << results.front().dump() << '\n';
    else
      context.out << io::Json(io::Json::Array(results)).dump() << '\n';
  }
}

}  // namespace

void add_simulate_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one training iteration (forward + backward) of a scenario");
  cmd->add_option("scenario", o->scenario, "Scenario (bundled name or path)")->required();
  cmd->add_option("--schedule", o->schedule, "A schedule name, or all (default: the scenario's)");
  cmd->add_option("--degree", o->degree, "Overlap / pipeline degree (default: the scenario's, else 4)");
  cmd->add_option("--set", o->sets, "Override a scalar field: field.path=value (repeatable)");
  cmd->add_option("--trace", o->trace, "Write a Chrome Trace Event JSON (pid = rank, tid = stream)");
  cmd->add_option("--svg", o->svg, "Write an SVG Gantt chart");
  cmd->add_flag("--json", o->json, "Print JSON: one object, or an array with --schedule all");
  cmd->callback([o, &context] { run_simulate(*o, context); });
}

}  // namespace moeplan::cli
