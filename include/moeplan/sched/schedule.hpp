#pragma once
// What every schedule builder returns, and the names of CLI.md's schedules.
// A builder reads a validated scenario and a cost model and emits a TaskGraph;
// it never runs it.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/dag/task_graph.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/parallel/rank_groups.hpp>

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
  /// Communication slows by this factor while compute of its rank runs: the profile's overlap_comm_slowdown.
  double overlap_comm_slowdown = 1.0;
};

/// @brief The knobs a builder takes.
struct ScheduleKnobs {
  std::string schedule = "none";
  std::int64_t degree = 1;
  /// FoldMoE: attention slice token counts fixed by the user (aaam, 1a1m); the
  /// degree is then their number. Empty: the schedule's own slicing.
  std::vector<std::int64_t> slicing_tokens = {};
  bool multi_rank = false;  ///< every rank, collectives over groups (schedule.mode)
  /// Record each compute task's work shape (dag::WorkShape, sched/work_shapes.hpp)
  /// for the executor; off in searches, whose graphs then pay nothing for it.
  bool record_work = false;
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
  const dag::WorkShape* work = nullptr;  ///< a compute task's work, when the builder records it
};

/// The graph bound of a run's limits (model::RunLimits), for a builder's TaskGraphBuilder.
dag::GraphLimit graph_limit(const model::RunLimits& limits);

/// Adds a task after its dependencies: the one way the builders emit tasks.
dag::TaskId emit_task(dag::TaskGraphBuilder& builder, const TaskLabels& labels, dag::TaskKind kind, model::OpClass op,
                      double duration_ms, std::vector<dag::ResourceId> resources,
                      const std::vector<dag::TaskId>& after);

/// Per rank, the task that rank's next step waits for: one entry (rank 0) in
/// symmetric mode, one per rank of the cluster in multi-rank mode.
using RankTasks = std::vector<dag::TaskId>;

/// @brief The ranks a builder's graph holds and the ranks each collective spans.
/// Symmetric: rank 0 stands for every rank and every group is {0}. Multi-rank:
/// every rank of the cluster, groups of Megatron's default order tp-cp-ep-dp-pp
/// (tp innermost; experts etp then ep), from parallel::make_mapping.
struct RankLayout {
  std::int32_t ranks = 1;
  parallel::RankGroups tp{{0}}, etp{{0}}, ep{{0}}, dp{{0}}, edp{{0}};
};

/// The layout of a scenario. Multi-rank needs pp = vpp = 1 (every rank runs
/// every layer); else an input error on schedule.mode naming `family`.
RankLayout rank_layout(const model::ScenarioSpec& scenario, bool multi_rank, const char* family);

/// A local task on every rank: rank r's copy runs on streams[r] after each
/// `after[i][r]`. Returns each rank's copy.
RankTasks emit_on_ranks(dag::TaskGraphBuilder& builder, const TaskLabels& labels, dag::TaskKind kind,
                        model::OpClass op, double duration_ms, const std::vector<dag::ResourceId>& streams,
                        const std::vector<RankTasks>& after);

/// One collective per group, holding every member's streams[r] (the engine
/// starts it once each has taken it), after every member's `after[i][r]`.
/// Returns, per rank, the collective of its group.
RankTasks emit_collective(dag::TaskGraphBuilder& builder, const TaskLabels& labels, model::OpClass op,
                          double duration_ms, const parallel::RankGroups& groups,
                          const std::vector<dag::ResourceId>& streams, const std::vector<RankTasks>& after);

/// @brief What one rank's copy of a task costs when ranks differ (uneven
/// expert load): its duration and the size (FLOPs or bytes) it was priced for.
struct RankCost {
  double duration_ms = 0;
  double size = 0;
  std::optional<dag::WorkShape> work{};  ///< that rank's work, when recorded (else the labels')
};
using RankCostFn = std::function<RankCost(std::int64_t rank)>;

/// emit_on_ranks with each rank's own cost (labels.size is replaced by it).
RankTasks emit_on_ranks(dag::TaskGraphBuilder& builder, const TaskLabels& labels, dag::TaskKind kind,
                        model::OpClass op, const RankCostFn& cost, const std::vector<dag::ResourceId>& streams,
                        const std::vector<RankTasks>& after);

/// emit_collective where members cost differently (an all-to-all-v): the
/// collective ends when its slowest member does, so each group's task lasts
/// its members' largest duration and carries their largest size.
RankTasks emit_collective(dag::TaskGraphBuilder& builder, const TaskLabels& labels, model::OpClass op,
                          const RankCostFn& cost, const parallel::RankGroups& groups,
                          const std::vector<dag::ResourceId>& streams, const std::vector<RankTasks>& after);

/// Per-rank compute slow-down of the scenario (K.1): the first ceil(fraction x
/// world) ranks run compute `factor` times slower; empty when none is set. For
/// multi-rank graphs, whose compute resources carry their rank.
std::vector<double> straggler_slowdown(const model::ScenarioSpec& scenario);

}  // namespace moeplan::sched
