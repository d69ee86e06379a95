#pragma once
// The discrete-event engine: runs a TaskGraph on its resources and records
// when every task started and ended. It knows nothing about MoE or about the
// schedule that built the graph: resources, tasks, amounts of work and rates.
//
// Semantics (docs/architecture.md, "Engine"):
// - a task is ready when all its dependencies have ended;
// - an InOrder resource starts its tasks in issue order, so a head task that is
//   not ready blocks the ones behind it; a Priority resource starts the ready
//   task of highest priority (ties: issue order), without preemption; a Shared
//   resource takes every ready task at once;
// - a task on several resources (a collective) is taken by each member
//   resource when that resource picks it, holds every member from then on,
//   and starts when the last member takes it;
// - a task has an amount of work (its duration at full rate) and progresses
//   at a rate that may change while it runs: a compute task runs at
//   1 / overlap_compute_slowdown while a communication task holding a resource
//   of its rank runs, and a communication task (not on Shared resources) at
//   1 / overlap_comm_slowdown while a compute task of any of its ranks runs;
//   a task on Shared resources pays its latency, then
//   streams its size at a max-min fair share of every shared link it crosses;
// - all events of one instant are applied before any resource picks, and the
//   event queue orders by (time, sequence), so results repeat bit for bit.

#include <cstdint>
#include <vector>

#include <moeplan/dag/task_graph.hpp>

namespace moeplan::sim {

/// @brief Knobs of one run.
struct EngineOptions {
  /// Per-rank factor on compute work (stragglers, heterogeneous GPUs);
  /// index = rank, missing ranks run at 1.0.
  std::vector<double> rank_compute_slowdown;
  /// Factor by which a compute task slows while communication of its rank runs
  /// beside it (shared SMs and memory bandwidth); 1 = overlap is free. From the
  /// cost profile's overlap_compute_slowdown.
  double overlap_compute_slowdown = 1.0;
  /// Factor by which a communication task slows while compute of one of its
  /// ranks runs beside it (a collective: of any member rank, the slowest sets
  /// its pace); 1 = communication beside compute is free. Transfers on Shared
  /// resources keep their link model. From the cost profile's overlap_comm_slowdown.
  double overlap_comm_slowdown = 1.0;
  /// Seeded per-task noise on compute work: a lognormal factor with mean 1 and
  /// this coefficient of variation (0 = none), drawn from (jitter_seed, task id),
  /// so it does not depend on the order tasks run in.
  double compute_jitter_cv = 0;
  std::uint64_t jitter_seed = 1;
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
  /// End events moved because a rate changed (overlap slowdown, link shares).
  std::uint64_t retimed_events = 0;
};

/// Runs the graph. A deadlock (tasks that can never start, e.g. collectives
/// issued in different orders on two in-order streams) is a runtime Error
/// naming a stuck task. Options out of range (a slowdown below 1 or not
/// finite, a negative jitter) are an input Error.
Timeline simulate(const dag::TaskGraph& graph, const EngineOptions& options = {});

/// The jitter factor of one task (lognormal, mean 1, coefficient of variation
/// cv): what simulate() multiplies the task's compute work by.
double compute_jitter_factor(std::uint64_t seed, dag::TaskId task, double cv);

}  // namespace moeplan::sim
