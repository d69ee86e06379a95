#include "scenario_support.hpp"

#include <algorithm>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/plan/flowmoe_planner.hpp>
#include <moeplan/plan/sweep.hpp>
#include <moeplan/sched/flowmoe.hpp>
#include <moeplan/sched/foldmoe.hpp>
#include <moeplan/sched/fsmoe.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {

RunnableScenario load_runnable(const std::string& scenario, const std::vector<std::string>& sets) {
  RunnableScenario run;
  run.spec = io::load_scenario(scenario, parse_overrides(sets));
  if (!run.spec.profile)
    throw Error(ErrorKind::Input, fmt::format("scenario '{}' names no cost profile; add profile_ref", run.spec.name),
                "profile_ref", SourceLocation{io::resolve_path(io::FileKind::Scenario, scenario), 0, 0});
  run.costs = std::make_unique<cost::CostModel>(*run.spec.profile);
  return run;
}

std::vector<std::string> family_schedules(const model::ScenarioSpec& s) {
  return plan::family_schedules(s.schedule.family);
}

const plan::FsMoePlan& RunnableScenario::fsmoe_plan() const {
  if (!fsmoe) fsmoe = std::make_unique<plan::FsMoePlan>(plan::plan_fsmoe(spec, *costs, {}));
  return *fsmoe;
}

std::vector<std::string> chosen_schedules(const model::ScenarioSpec& s, const std::string& requested) {
  const std::vector<std::string> all = family_schedules(s);
  if (requested == "all") return all;
  if (std::find(all.begin(), all.end(), requested) == all.end())
    throw Error(ErrorKind::Input, fmt::format("--schedule: '{}' is not a {} schedule", requested, s.schedule.family));
  return {requested};
}

sched::BuiltSchedule build_schedule(const RunnableScenario& run, const std::string& schedule, std::int64_t degree) {
  if (run.spec.schedule.family == "fsmoe") {
    sched::FsMoeKnobs knobs = plan::fsmoe_knobs(run.fsmoe_plan(), schedule);
    if (degree > 0) {
      knobs.degree_forward = knobs.degree_backward = degree;
      knobs.degree_backward_per_layer.clear();
    }
    return sched::build_fsmoe(run.spec, *run.costs, knobs);
  }
  if (run.spec.schedule.family == "flowmoe") {
    // R: --degree, else FlowMoE's default 2 (its code fixes R = 2); Sp: the
    // scenario's, else the largest per-block tensor's 1/4 (the code starts BO at 4 MiB).
    const auto [lo, hi] = plan::chunk_search_space(run.spec);
    const std::int64_t chunk = run.spec.schedule.ar_chunk_bytes.value_or(std::max(lo, hi / 4));
    return sched::build_flowmoe(run.spec, *run.costs,
                                plan::flowmoe_knobs(run.spec, schedule, degree > 0 ? degree : 2, chunk));
  }
  return sched::build_foldmoe(run.spec, *run.costs, {schedule, degree > 0 ? degree : 4});
}

io::Json evaluation_to_json(const std::string& scenario, const plan::Evaluation& e) {
  io::Json j = io::Json::object();
  j.set("scenario", scenario);
  j.set("schedule", e.schedule);
  j.set("degree", e.degree);
  j.set("iteration_ms", e.iteration_ms);
  j.set("forward_ms", e.forward_ms);
  j.set("backward_ms", e.backward_ms);
  j.set("compute_ms", e.compute_ms);
  j.set("comm_ms", e.comm_ms);
  j.set("exposed_comm_ms", e.exposed_comm_ms);
  j.set("bubble_ms", e.bubble_ms);
  j.set("tasks", e.tasks);
  j.set("a2a_total_ms", e.a2a_total_ms);
  j.set("a2a_critical_ms", e.a2a_critical_ms);
  io::Json flops = io::Json::object();
  flops.set("forward", e.attention_flops_forward);
  flops.set("backward", e.attention_flops_backward);
  j.set("attention_flops", flops);
  io::Json per_layer = io::Json::array();
  const std::size_t layers =
      std::max(e.attention_flops_forward_per_layer.size(), e.attention_flops_backward_per_layer.size());
  for (std::size_t layer = 0; layer < layers; ++layer) {
    io::Json entry = io::Json::object();
    entry.set("layer", static_cast<std::int64_t>(layer));
    entry.set("forward",
              layer < e.attention_flops_forward_per_layer.size() ? e.attention_flops_forward_per_layer[layer] : 0.0);
    entry.set("backward",
              layer < e.attention_flops_backward_per_layer.size() ? e.attention_flops_backward_per_layer[layer] : 0.0);
    per_layer.push(std::move(entry));
  }
  j.set("attention_flops_per_layer", per_layer);
  return j;
}

}  // namespace moeplan::cli
