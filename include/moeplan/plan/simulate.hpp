#pragma once
// `moeplan simulate` as a library call: the scenario's family simulates it
// (plan/family.hpp): each requested named schedule built at its knobs, run on
// the engine, evaluated (with noise and routing figures when the scenario
// asks), one schedule per worker; a family that searches mappings prices the
// scenario's own mapping. The CLI and the Python module both call simulate(),
// so that they report the same runs.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/family.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/sched/schedule.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::plan {

/// The scenario simulated by its family.
Simulation simulate(const ScenarioRun& run, const SimulateRequest& request);

/// Simulates `schedules` (names ScenarioRun::runnable_schedules gave) at
/// `degree` when given, on `threads` workers; results by index, so they do not
/// depend on the thread count. `started`, when given, receives how many threads could start.
std::vector<SimulatedSchedule> simulate_schedules(const ScenarioRun& run, const std::vector<std::string>& schedules,
                                                  std::optional<std::int64_t> degree, unsigned threads,
                                                  bool keep_graphs = false, unsigned* started = nullptr);

/// The one graph a trace of the scenario holds (Family::graph).
ScenarioGraph scenario_graph(const ScenarioRun& run, const std::string& schedule, std::optional<std::int64_t> degree);

/// Input error (field schedule.compute_jitter_cv) for a scenario with compute
/// noise: `command` (plan, sweep) ranks schedules on the noiseless model.
void refuse_noise(const model::ScenarioSpec& scenario, const char* command);

/// Input error (field schedule.search) for a scenario that leaves knobs to the
/// planner: `command` (simulate, sweep) runs one configuration.
void refuse_search(const model::ScenarioSpec& scenario, const char* command);

}  // namespace moeplan::plan
