#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/plausibility.hpp>

#include <algorithm>

namespace moeplan::plan {

Evaluation evaluate(const sched::BuiltSchedule& built, const sim::Timeline& tl) {
  const dag::TaskGraph& g = built.graph;
  Evaluation e;
  e.schedule = built.schedule;
  e.degree = built.degree;
  e.iteration_ms = tl.makespan_ms;
  for (dag::TaskId t = 0; t < g.size(); ++t)
    if (g.phase(t) == dag::Phase::Forward) e.forward_ms = std::max(e.forward_ms, tl.end_ms[t]);
  e.backward_ms = e.iteration_ms - e.forward_ms;
  const sim::Summary summary = sim::summarize(g, tl);
  e.compute_ms = summary.critical_rank.compute_busy_ms;
  e.comm_ms = summary.critical_rank.comm_busy_ms;
  e.exposed_comm_ms = summary.critical_rank.exposed_comm_ms;
  e.bubble_ms = summary.critical_rank.bubble_ms;
  e.tasks = static_cast<std::int64_t>(g.size());
  for (dag::TaskId t = 0; t < g.size(); ++t)
    if (g.op(t) == model::OpClass::A2A) e.a2a_total_ms += tl.end_ms[t] - tl.start_ms[t];
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    if (g.op(t) != model::OpClass::Attention || g.layer(t) < 0) continue;
    if (g.resources()[g.resources(t).front()].rank != 0) continue;
    const bool backward = g.phase(t) == dag::Phase::Backward;
    std::vector<double>& per_layer =
        backward ? e.attention_flops_backward_per_layer : e.attention_flops_forward_per_layer;
    const std::size_t layer = static_cast<std::size_t>(g.layer(t));
    if (per_layer.size() <= layer) per_layer.resize(layer + 1, 0.0);
    per_layer[layer] += g.size(t);
    (backward ? e.attention_flops_backward : e.attention_flops_forward) += g.size(t);
  }
  for (const sim::CriticalStep& step : sim::critical_path(g, tl))
    if (g.op(step.task) == model::OpClass::A2A) e.a2a_critical_ms += tl.end_ms[step.task] - tl.start_ms[step.task];
  check_plausible(e);
  return e;
}

sim::Timeline run_schedule(const sched::BuiltSchedule& built) {
  sim::EngineOptions options;
  options.rank_compute_slowdown = built.rank_compute_slowdown;
  return sim::simulate(built.graph, options);
}

Evaluation evaluate(const sched::BuiltSchedule& built) { return evaluate(built, run_schedule(built)); }

}  // namespace moeplan::plan
