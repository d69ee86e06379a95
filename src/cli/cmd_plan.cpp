// moeplan plan SCENARIO [--schedule NAME|all] [--set k=v]... [-o PLAN] [--json]

#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/atomic_file.hpp>
#include <moeplan/io/plan_writer.hpp>
#include <moeplan/plan/foldmoe_planner.hpp>

#include "cli_context.hpp"
#include "scenario_support.hpp"

namespace moeplan::cli {
namespace {

struct PlanOptions {
  std::string scenario;
  std::string schedule = "all";
  std::vector<std::string> sets;
  std::string output;
  bool json = false;
};

void run_plan(const PlanOptions& o, CliContext& context) {
  const RunnableScenario run = load_runnable(o.scenario, o.sets);
  std::vector<std::string> schedules = chosen_schedules(run.spec, o.schedule);
  // The baselines are always evaluated so speed-ups can be reported.
  std::vector<std::string> searched{"none", "tutel"};
  for (const std::string& s : schedules)
    if (s != "none" && s != "tutel") searched.push_back(s);
  const std::int64_t max_degree = run.spec.schedule.degree.value_or(32);
  plan::FoldMoePlan result = plan::plan_foldmoe(run.spec, *run.costs, searched, max_degree);
  if (run.spec.schedule.degree) {
    // The scenario fixes d: evaluate exactly that degree (none stays at 1).
    for (plan::ScheduleChoice& c : result.schedules)
      if (c.best.schedule != "none") {
        const sched::BuiltSchedule built = build_schedule(run, c.best.schedule, *run.spec.schedule.degree);
        c.best = plan::evaluate(built);
        c.slicing_tokens = built.slicing_tokens;
      }
  }
  // The best among the requested schedules.
  std::size_t best = result.schedules.size();
  for (std::size_t i = 0; i < result.schedules.size(); ++i) {
    const bool requested = std::find(schedules.begin(), schedules.end(), result.schedules[i].best.schedule) != schedules.end();
    if (requested && (best == result.schedules.size() ||
                      result.schedules[i].best.iteration_ms < result.schedules[best].best.iteration_ms))
      best = i;
  }
  const plan::ScheduleChoice& chosen = result.schedules[best];
  const double none_ms = result.schedules[0].best.iteration_ms;
  const double tutel_ms = result.schedules[1].best.iteration_ms;
  model::PlanSpec spec;
  spec.scenario = run.spec.name;
  spec.schedule = chosen.best.schedule;
  spec.iteration_ms = chosen.best.iteration_ms;
  spec.baseline_ms = none_ms;
  spec.speedup = none_ms / chosen.best.iteration_ms;
  spec.knobs.degree = chosen.best.degree;
  spec.knobs.slicing_tokens = chosen.slicing_tokens;
  if (!o.output.empty()) {
    const bool as_json = o.output.size() >= 5 && o.output.compare(o.output.size() - 5, 5, ".json") == 0;
    io::Json plan_json = io::Json::object();
    plan_json.set("scenario", spec.scenario);
    plan_json.set("schedule", spec.schedule);
    plan_json.set("iteration_ms", spec.iteration_ms);
    plan_json.set("baseline_ms", spec.baseline_ms);
    plan_json.set("speedup", spec.speedup);
    plan_json.set("knobs", io::knobs_to_json(spec.knobs));
    io::write_file_atomic(o.output, as_json ? plan_json.dump() + "\n" : io::plan_to_textproto(spec));
  }
  if (o.json) {
    io::Json doc = io::Json::object();
    doc.set("scenario", spec.scenario);
    doc.set("schedule", spec.schedule);
    doc.set("iteration_ms", spec.iteration_ms);
    doc.set("baseline_ms", spec.baseline_ms);
    doc.set("speedup", spec.speedup);
    doc.set("tutel_ms", tutel_ms);
    doc.set("speedup_vs_tutel", tutel_ms / spec.iteration_ms);
    io::Json knobs = io::knobs_to_json(spec.knobs);
    knobs.set("slicing_scheme", chosen.best.schedule == "1a1m-uniform" ? "time-uniform"
                                : chosen.slicing_tokens.empty()         ? "none"
                                                                        : "token-uniform");
    doc.set("knobs", knobs);
    doc.set("a2a_critical_ms", chosen.best.a2a_critical_ms);
    doc.set("a2a_total_ms", chosen.best.a2a_total_ms);
    io::Json all = io::Json::array();
    for (const plan::ScheduleChoice& c : result.schedules) {
      io::Json entry = evaluation_to_json(spec.scenario, c.best);
      entry.set("speedup_vs_none", none_ms / c.best.iteration_ms);
      entry.set("speedup_vs_tutel", tutel_ms / c.best.iteration_ms);
      io::Json tried = io::Json::array();
      for (const auto& [d, ms] : c.tried) tried.push(io::Json(io::Json::Array{io::Json(d), io::Json(ms)}));
      entry.set("degrees_tried", tried);
      all.push(std::move(entry));
    }
    doc.set("schedules", all);
    context.out << doc.dump() << '\n';
    return;
  }
  context.out << fmt::format("plan for {}: {} with d = {}: {:.3f} ms per iteration\n", spec.scenario, spec.schedule,
                             *spec.knobs.degree, spec.iteration_ms);
  context.out << fmt::format("  speed-up {:.3f}x over none ({:.3f} ms), {:.3f}x over tutel ({:.3f} ms)\n",
                             spec.speedup, none_ms, tutel_ms / spec.iteration_ms, tutel_ms);
  if (!chosen.slicing_tokens.empty()) {
    std::string slices;
    for (std::int64_t t : chosen.slicing_tokens) slices += fmt::format("{}{}", slices.empty() ? "" : " ", t);
    context.out << "  attention slices (tokens): " << slices << '\n';
  }
  context.out << fmt::format("  AlltoAll on the critical path {:.3f} ms of {:.3f} ms\n", chosen.best.a2a_critical_ms,
                             chosen.best.a2a_total_ms);
  for (const plan::ScheduleChoice& c : result.schedules)
    context.out << fmt::format("  {:<14} best d = {:<3} {:9.3f} ms  ({:.3f}x vs none)\n", c.best.schedule, c.best.degree,
                               c.best.iteration_ms, none_ms / c.best.iteration_ms);
  if (!o.output.empty()) context.out << "  wrote " << o.output << '\n';
}

}  // namespace

void add_plan_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "Search the scenario's open knobs and write the best plan");
  cmd->add_option("scenario", o->scenario, "Scenario (bundled name or path)")->required();
  cmd->add_option("--schedule", o->schedule, "A schedule name, or all (default)");
  cmd->add_option("--set", o->sets, "Override a scalar field: field.path=value (repeatable)");
  cmd->add_option("-o,--output", o->output, "Write the plan (text format, or JSON for a .json name)");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o, &context] { run_plan(*o, context); });
}

}  // namespace moeplan::cli
