#include <moeplan/plan/plan_result.hpp>

#include <algorithm>

#include <moeplan/plan/plausibility.hpp>

namespace moeplan::plan {

const Baseline* PlanResult::baseline(const std::string& name) const {
  for (const Baseline& b : baselines)
    if (b.name == name) return &b;
  return nullptr;
}

void rank_candidates(std::vector<Candidate>& candidates) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.iteration_ms < b.iteration_ms; });
}

model::PlanSpec plan_spec(const PlanResult& result) {
  model::PlanSpec spec;
  spec.scenario = result.scenario;
  spec.family = result.family;
  spec.schedule = result.chosen.schedule;
  spec.iteration_ms = result.chosen.iteration_ms;
  spec.baseline_ms = result.baselines.empty() ? 0.0 : result.baselines.front().iteration_ms;
  spec.speedup = spec.baseline_ms > 0 ? spec.baseline_ms / spec.iteration_ms : 0.0;
  if (spec.baseline_ms > 0) check_plausible_speedup(spec.speedup, "plan speedup");
  spec.knobs = result.chosen.knobs;
  return spec;
}

}  // namespace moeplan::plan
