#pragma once
// What a timeline means: busy and exposed times per rank, bubbles, and the
// critical path. Computed after the run from the graph and its timeline.

#include <cstdint>
#include <string>
#include <vector>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::sim {

/// @brief Where one rank's time went, in ms.
struct RankSummary {
  std::int32_t rank = 0;
  double end_ms = 0;           ///< when the rank's last task ended
  double compute_busy_ms = 0;  ///< time some compute task ran (union of intervals)
  double comm_busy_ms = 0;     ///< time some communication task ran (union)
  double exposed_comm_ms = 0;  ///< communication not hidden under compute
  double bubble_ms = 0;        ///< makespan minus compute busy: compute idle
};

/// @brief Busy time of one resource.
struct ResourceSummary {
  std::string name;
  std::int32_t rank = 0;
  double busy_ms = 0;
  std::size_t tasks = 0;
};

/// @brief The whole run.
struct Summary {
  double makespan_ms = 0;
  RankSummary critical_rank;       ///< the rank that ends last (lowest rank on ties)
  std::vector<RankSummary> ranks;  ///< every rank that has tasks, ascending
  std::vector<ResourceSummary> resources;
};

Summary summarize(const dag::TaskGraph& graph, const Timeline& timeline);

/// The time some of `intervals` (start, end) covers: summarize's union of a
/// rank's busy intervals. Sorts and merges them in place (empty ones dropped,
/// touching ones joined), then sums the merged lengths in time order.
double covered_ms(std::vector<std::pair<double, double>>& intervals);

/// Why a task on the critical path started when it did.
enum class StartCause { Origin, Dependency, Resource };

/// @brief One task of the critical path.
struct CriticalStep {
  dag::TaskId task = 0;
  StartCause cause = StartCause::Origin;  ///< what it waited for: the step before it
};

/// The chain of tasks and resource waits that sets the makespan, first to
/// last: from the task that ends last, step back to the dependency that ended
/// exactly at its start (a data wait), else to the task that freed one of its
/// resources then and started before it (Timeline::start_order: a resource
/// wait), until a task with neither. Each step goes to an earlier-started
/// task, so zero-length tasks cannot make the walk circle.
std::vector<CriticalStep> critical_path(const dag::TaskGraph& graph, const Timeline& timeline);

/// Sum over tasks of the path's durations, by task kind.
double critical_path_ms(const dag::TaskGraph& graph, const Timeline& timeline, const std::vector<CriticalStep>& path,
                        dag::TaskKind kind);

const char* to_string(StartCause cause);

}  // namespace moeplan::sim
