#pragma once
// A task graph as real work (docs/architecture.md, "Executor"): each compute
// task a GEMM or a causal attention core of the model's dimensions carrying
// the FLOPs the cost model priced (TaskGraph::size), each communication task a
// collective of its bytes over the global ranks of its resources.

#include <cstdint>
#include <span>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/exec/backend.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::exec {

/// The replay of `graph`, built from `scenario` (its model's dimensions).
/// `slicing_tokens`: the attention slices of one sequence the schedule chose
/// (sched::BuiltSchedule::slicing_tokens; FoldMoE), whose index is an attention
/// task's micro_batch; empty: every attention task covers whole sequences.
///
/// Shapes (and why: docs/architecture.md, "Executor"):
/// - Gemm tasks named "... gate ...": the router, [m x d_model] x [d_model x E];
///   "... ffn" (a dense block): [m x d_model] x [d_model x ffn_hidden], 2 GEMMs
///   (GELU) or 3 (SwiGLU); any other Gemm task: the experts, [m x d_model] x
///   [d_model x expert_ffn_hidden], 2 or 3 GEMMs, as cost::expert_ffn_time
///   prices them. m = round(size / (2 d n count)), at least 1: a backward task
///   (2x the FLOPs) replays as twice the tokens.
/// - Attention tasks: `queries` after `context - queries` earlier tokens (the
///   slice, or l = c = seq_len / cp), split as cost::attention_task_shape
///   splits them for the cost model: size / attention_flops of one sequence
///   sequences, whose Q, K, V, O projection GEMMs run first, then the causal
///   core over their heads (backward: 2x of both). FlowMoE's AT task also
///   carries the gate's FLOPs (1.2% of host-flowmoe-small's): they replay as
///   further attention of the same split.
/// - Communication: CommWork{op, size, ranks of the task's resources}; P2P keeps
///   the resources' order (sender, receiver).
/// Input error (naming the task) for a task whose work cannot be replayed
/// (a Gemm task of a model without the dimensions, a compute task that is not
/// Gemm or Attention).
ReplayPlan make_replay_plan(const dag::TaskGraph& graph, const model::ScenarioSpec& scenario,
                            std::span<const std::int64_t> slicing_tokens = {});

/// FLOPs of a replay task's compute (0 for communication): 2 m n k x count, or
/// cost::attention_core_flops of its shape plus its projections'.
double replay_flops(const ReplayTask& task);

}  // namespace moeplan::exec
