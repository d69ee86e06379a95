#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/plausibility.hpp>

#include <algorithm>
#include <cmath>

#include <moeplan/core/error.hpp>

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

Noise noise_of(const model::ScenarioSpec& s) {
  return Noise{s.schedule.compute_jitter_cv, s.schedule.jitter_seeds, s.schedule.jitter_seed};
}

sim::Timeline run_schedule(const sched::BuiltSchedule& built, const Noise& noise, std::uint64_t seed) {
  sim::EngineOptions options;
  options.rank_compute_slowdown = built.rank_compute_slowdown;
  options.overlap_compute_slowdown = built.overlap_compute_slowdown;
  options.overlap_comm_slowdown = built.overlap_comm_slowdown;
  options.compute_jitter_cv = noise.compute_jitter_cv;
  options.jitter_seed = seed;
  return sim::simulate(built.graph, options);
}

NoiseSummary run_with_noise(const sched::BuiltSchedule& built, const Noise& noise) {
  MOEPLAN_CHECK(noise.compute_jitter_cv > 0 && noise.seeds >= 1, "noise needs a coefficient of variation and seeds");
  std::vector<double> iterations;
  for (std::int64_t i = 0; i < noise.seeds; ++i)
    iterations.push_back(run_schedule(built, noise, noise.first_seed + static_cast<std::uint64_t>(i)).makespan_ms);
  NoiseSummary out;
  out.seeds = noise.seeds;
  out.compute_jitter_cv = noise.compute_jitter_cv;
  double sum = 0;
  for (double v : iterations) sum += v;  // in seed order: the same sum at any thread count
  out.mean_ms = sum / static_cast<double>(iterations.size());
  std::sort(iterations.begin(), iterations.end());
  // Nearest-rank percentile: the smallest value with at least 95% of the runs at or below it.
  const std::size_t rank = static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(iterations.size())));
  out.p95_ms = iterations[std::max<std::size_t>(rank, 1) - 1];
  out.min_ms = iterations.front();
  out.max_ms = iterations.back();
  return out;
}

Evaluation evaluate(const sched::BuiltSchedule& built) { return evaluate(built, run_schedule(built)); }

}  // namespace moeplan::plan
