#pragma once
// A task graph as real work (docs/architecture.md, "Executor"): each compute
// task the GEMMs and the causal attention core its builder priced and recorded
// (dag::WorkShape; sched/work_shapes.hpp says how each is split), each
// communication task a collective of its bytes over the global ranks of its
// resources.

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/exec/backend.hpp>

namespace moeplan::exec {

/// The replay of `graph`:
/// - a compute task: its recorded work (TaskGraph::work), as recorded; the
///   graph must have been built with work recorded (plan::ScenarioRun::build_for_replay);
/// - a communication task: CommWork{op, size, ranks of the task's resources};
///   P2P keeps the resources' order (sender, receiver), others are ascending.
/// Input error, naming the task, for a compute task without recorded work.
ReplayPlan make_replay_plan(const dag::TaskGraph& graph);

/// FLOPs of a replay task's compute (0 for communication): 2 m n k x count
/// over its GEMMs, plus cost::attention_core_flops of its core's shape.
double replay_flops(const ReplayTask& task);

}  // namespace moeplan::exec
