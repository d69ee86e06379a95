#pragma once
// What every schedule builder returns, and the names of CLI.md's schedules.
// A builder reads a validated scenario and a cost model and emits a TaskGraph;
// it never runs it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/dag/task_graph.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::sched {

/// @brief A built schedule: the graph and the knobs it was built with.
struct BuiltSchedule {
  dag::TaskGraph graph;
  std::string schedule;
  std::int64_t degree = 1;
  std::vector<std::int64_t> slicing_tokens;   ///< attention slices of one sequence, where sliced
  std::vector<double> rank_compute_slowdown;  ///< per-rank compute factors for the engine (stragglers)
  /// Compute slows by this factor while communication of its rank runs: the
  /// cost profile's overlap_compute_slowdown (the cost model is where time comes from).
  double overlap_compute_slowdown = 1.0;
};

/// @brief The knobs a builder takes.
struct ScheduleKnobs {
  std::string schedule = "none";
  std::int64_t degree = 1;
  /// FoldMoE: attention slice token counts fixed by the user (aaam, 1a1m); the
  /// degree is then their number. Empty: the schedule's own slicing.
  std::vector<std::int64_t> slicing_tokens = {};
};

/// @brief The labels of one task, for builders that emit many alike.
struct TaskLabels {
  std::string_view name;
  dag::Phase phase = dag::Phase::None;
  std::int32_t layer = -1;
  std::int32_t index = -1;  ///< micro-batch, chunk or slice
  std::int32_t priority = 0;
  std::int64_t group = 1;  ///< ranks in a collective
  double size = 0;         ///< FLOPs (compute) or bytes (communication) the task was priced for
};

/// The graph bound of a run's limits (model::RunLimits), for a builder's TaskGraphBuilder.
dag::GraphLimit graph_limit(const model::RunLimits& limits);

/// Adds a task after its dependencies: the one way the builders emit tasks.
dag::TaskId emit_task(dag::TaskGraphBuilder& builder, const TaskLabels& labels, dag::TaskKind kind, model::OpClass op,
                      double duration_ms, std::vector<dag::ResourceId> resources,
                      const std::vector<dag::TaskId>& after);


}  // namespace moeplan::sched
