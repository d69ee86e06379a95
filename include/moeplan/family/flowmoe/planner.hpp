#pragma once
// FlowMoE's planner: the pipelining degree R from {1, 2, 4, 8, 16} (Table 4 of
// the paper varies it) jointly with the all-reduce chunk size Sp, tuned by
// Bayesian optimisation on the simulator for each R.

#include <cstdint>
#include <string>
#include <vector>

#include <moeplan/core/progress.hpp>
#include <moeplan/core/parallel.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/family/flowmoe/sp_tuner.hpp>
#include <moeplan/family/flowmoe/builder.hpp>

namespace moeplan::flowmoe {

/// @brief One schedule's best knobs.
struct FlowMoeChoice {
  plan::Evaluation best;
  std::int64_t ar_chunk_bytes = 0;  ///< 0 for schedules without chunks
  TunerResult tuning;               ///< BO trace at the best R (chunked schedules)
};

/// @brief The planner's answer for a FlowMoE scenario.
struct FlowMoePlan {
  std::vector<FlowMoeChoice> schedules;  ///< in the order asked
  std::size_t best = 0;
  ThreadsStarted threads;  ///< of the search's parallel step
};

/// Degrees searched.
const std::vector<std::int64_t>& flowmoe_degrees();

/// Sp's search space for a scenario: [128 KiB, largest per-block all-reduce tensor].
std::pair<std::int64_t, std::int64_t> chunk_search_space(const model::ScenarioSpec& scenario);

/// The knobs of one evaluation (mode and stragglers from the scenario).
flowmoe::FlowMoeKnobs flowmoe_knobs(const model::ScenarioSpec& scenario, const std::string& schedule, std::int64_t degree,
                                  std::int64_t chunk_bytes);

/// The scenario's schedule.degree fixes R, its schedule.ar_chunk_bytes fixes Sp.
/// Results do not depend on `threads`.
FlowMoePlan plan_flowmoe(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                         const std::vector<std::string>& schedules, const BayesSettings& settings = {},
                         unsigned threads = 1, Progress* progress = nullptr);

}  // namespace moeplan::flowmoe
