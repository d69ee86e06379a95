#pragma once
// What execute, validate-hw and bench executor share: one schedule of a
// scenario built as simulate builds it, simulated, replayed on a backend, and
// compared.

#include <cstdint>
#include <optional>
#include <string>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/exec/backend.hpp>
#include <moeplan/exec/compare.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::cli {

/// @brief One schedule, simulated and executed.
struct ExecutedSchedule {
  std::string schedule;
  std::int64_t degree = 1;
  std::string backend;
  std::size_t tasks = 0;
  dag::TaskGraph graph;
  sim::Timeline simulated;
  exec::MeasuredRun measured;
  exec::Comparison comparison;  ///< set when measured.complete
};

/// Folding scenarios (pipeline stages, P2P between them) have no replay: an
/// input error naming schedule.family.
void check_executable(const model::ScenarioSpec& spec);

/// Builds `schedule` (as simulate does), simulates it, replays it on `backend`.
ExecutedSchedule execute_schedule(const plan::ScenarioRun& run, const std::string& schedule,
                                  std::optional<std::int64_t> degree, exec::Backend& backend,
                                  const exec::ExecuteOptions& options);

}  // namespace moeplan::cli
