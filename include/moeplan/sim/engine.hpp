#pragma once
// The discrete-event engine: runs a TaskGraph on its resources and records
// when every task started and ended. It knows nothing about MoE or about the
// schedule that built the graph.
//
// Semantics (docs/architecture.md, "Engine"):
// - a task is ready when all its dependencies have ended;
// - an InOrder resource starts its tasks in issue order, so a head task that is
//   not ready blocks the ones behind it; a Priority resource starts the ready
//   task of highest priority (ties: issue order), without preemption;
// - a task on several resources (a collective) is taken by each member
//   resource when that resource picks it, holds every member from then on,
//   and starts when the last member takes it;
// - all events of one instant are applied before any resource picks, and the
//   event queue orders by (time, sequence), so results repeat bit for bit.

#include <cstdint>
#include <vector>

#include <moeplan/dag/task_graph.hpp>

namespace moeplan::sim {

/// @brief Knobs of one run.
struct EngineOptions {
  /// Per-rank factor on compute durations (stragglers, heterogeneous GPUs);
  /// index = rank, missing ranks run at 1.0.
  std::vector<double> rank_compute_slowdown;
};

/// @brief When each task ran, in ms from the start of the iteration.
struct Timeline {
  std::vector<double> start_ms;
  std::vector<double> end_ms;
  /// Rank of each task among all starts (0 = first started). Ties in time are
  /// common (zero-length tasks, several resources picking at one instant);
  /// this says which task a resource took first.
  std::vector<std::uint32_t> start_order;
  double makespan_ms = 0;
  /// Peak heap bytes the run held besides the graph (this timeline included).
  std::size_t engine_bytes = 0;
};

/// Runs the graph. A deadlock (tasks that can never start, e.g. collectives
/// issued in different orders on two in-order streams) is a runtime Error
/// naming a stuck task.
Timeline simulate(const dag::TaskGraph& graph, const EngineOptions& options = {});

}  // namespace moeplan::sim
