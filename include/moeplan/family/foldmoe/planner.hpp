#pragma once
// FoldMoE's planner: for each schedule, the overlap degree d that gives the
// shortest simulated iteration (foldmoe.md section 5 searches {2, 4, 8, 16};
// we search 1..32, Tutel's limit). Per-task startup costs (alpha) make too
// large a d lose, so the search has an interior optimum.

#include <cstdint>
#include <string>
#include <vector>

#include <moeplan/core/parallel.hpp>
#include <moeplan/core/progress.hpp>
#include <moeplan/plan/evaluation.hpp>

namespace moeplan::foldmoe {

/// @brief The best degree of one schedule and what it gives.
struct ScheduleChoice {
  plan::Evaluation best;
  std::vector<std::int64_t> slicing_tokens;
  std::vector<std::pair<std::int64_t, double>> tried;  ///< (degree, iteration_ms), ascending degree
};

/// @brief The planner's answer for a FoldMoE scenario.
struct FoldMoePlan {
  std::vector<ScheduleChoice> schedules;  ///< in foldmoe_schedules() order
  std::size_t best = 0;                   ///< index of the fastest schedule (earliest on ties)
  double none_ms = 0;
  double tutel_ms = 0;
  ThreadsStarted threads;  ///< of the search's parallel step
};

/// Degrees tried: 1..max_degree (<= 32, and no more than a rank's tokens per
/// sequence); the scenario's schedule.degree fixes d, its schedule.slicing fixes
/// aaam's and 1a1m's attention slices (the caller leaves 1a1m-uniform out then).
/// Results do not depend on `threads`.
FoldMoePlan plan_foldmoe(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                         const std::vector<std::string>& schedules, std::int64_t max_degree = 32,
                         unsigned threads = 1, Progress* progress = nullptr);

}  // namespace moeplan::foldmoe
