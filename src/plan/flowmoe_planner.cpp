#include <moeplan/plan/flowmoe_planner.hpp>

#include <algorithm>

namespace moeplan::plan {

const std::vector<std::int64_t>& flowmoe_degrees() {
  static const std::vector<std::int64_t> degrees{1, 2, 4, 8, 16};
  return degrees;
}

std::pair<std::int64_t, std::int64_t> chunk_search_space(const model::ScenarioSpec& s) {
  const auto largest = static_cast<std::int64_t>(sched::flowmoe_block_allreduce_bytes(s));
  return {std::min(kMinChunkBytes, std::max<std::int64_t>(largest, 1)), std::max<std::int64_t>(largest, 1)};
}

sched::FlowMoeKnobs flowmoe_knobs(const model::ScenarioSpec& s, const std::string& schedule, std::int64_t degree,
                                  std::int64_t chunk_bytes) {
  sched::FlowMoeKnobs k;
  k.schedule = schedule;
  k.degree = degree;
  k.ar_chunk_bytes = std::max<std::int64_t>(chunk_bytes, 1);
  k.multi_rank = s.schedule.multi_rank;
  return k;
}

FlowMoePlan plan_flowmoe(const model::ScenarioSpec& s, const cost::CostModel& costs,
                         const std::vector<std::string>& schedules, const BayesSettings& settings) {
  FlowMoePlan out;
  const auto [lo, hi] = chunk_search_space(s);
  for (const std::string& name : schedules) {
    FlowMoeChoice choice;
    bool first = true;
    const bool chunked = name == "flowmoe" || name == "flowmoe-ar";
    const std::vector<std::int64_t> degrees = name == "none" ? std::vector<std::int64_t>{1} : flowmoe_degrees();
    const std::vector<std::int64_t> fixed_r =
        s.schedule.degree ? std::vector<std::int64_t>{*s.schedule.degree} : degrees;
    for (std::int64_t r : name == "none" ? degrees : fixed_r) {
      TunerResult tuning;
      std::int64_t chunk = hi;
      if (chunked) {
        if (s.schedule.ar_chunk_bytes) {
          chunk = *s.schedule.ar_chunk_bytes;  // the scenario fixes Sp
        } else {
          tuning = tune_bayesian(
              [&](std::int64_t bytes) {
                return evaluate(sched::build_flowmoe(s, costs, flowmoe_knobs(s, name, r, bytes))).iteration_ms;
              },
              lo, hi, settings);
          chunk = tuning.best_bytes;
        }
      }
      const Evaluation e = evaluate(sched::build_flowmoe(s, costs, flowmoe_knobs(s, name, r, chunk)));
      if (first || e.iteration_ms < choice.best.iteration_ms) {
        choice.best = e;
        choice.ar_chunk_bytes = chunked ? chunk : 0;
        choice.tuning = tuning;
        first = false;
      }
    }
    out.schedules.push_back(std::move(choice));
  }
  for (std::size_t i = 1; i < out.schedules.size(); ++i)
    if (out.schedules[i].best.iteration_ms < out.schedules[out.best].best.iteration_ms) out.best = i;
  return out;
}

}  // namespace moeplan::plan
