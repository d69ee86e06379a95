#pragma once
// `moeplan simulate` as a library call: each requested schedule of a scenario
// built at its knobs, run on the engine, evaluated (with noise and routing
// figures when the scenario asks), one schedule per worker. The CLI and the
// Python module both run it, so that they report the same runs.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/sched/schedule.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::plan {

/// @brief One simulated schedule: its figures, and its graph and timeline when kept (pictures).
struct SimulatedSchedule {
  Evaluation evaluation;                     ///< routing set when the scenario's routing is not balanced
  std::optional<NoiseSummary> noise;         ///< when schedule.compute_jitter_cv > 0
  std::optional<sched::BuiltSchedule> built;  ///< kept only when asked
  sim::Timeline timeline;                     ///< kept only when asked
};

/// Simulates `schedules` (names ScenarioRun::runnable_schedules gave) of a
/// foldmoe, fsmoe or flowmoe scenario at `degree` when given, on `threads`
/// workers; results by index, so they do not depend on the thread count.
/// `started`, when given, receives how many threads could start.
std::vector<SimulatedSchedule> simulate_schedules(const ScenarioRun& run, const std::vector<std::string>& schedules,
                                                  std::optional<std::int64_t> degree, unsigned threads,
                                                  bool keep_graphs = false, unsigned* started = nullptr);

/// Input error (field schedule.compute_jitter_cv) for a scenario with compute
/// noise: `command` (plan, sweep) ranks schedules on the noiseless model.
void refuse_noise(const model::ScenarioSpec& scenario, const char* command);

}  // namespace moeplan::plan
