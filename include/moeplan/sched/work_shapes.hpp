#pragma once
// The work shapes a schedule builder records for the executor
// (dag/work_shape.hpp; ScheduleKnobs::record_work), each from the same
// decomposition the cost model prices the task by, so that what is replayed is
// what was priced. GEMM dimensions are rounded to whole rows and columns (at
// least 1); equal neighbouring GEMMs are merged into one batch.

#include <cstdint>
#include <vector>

#include <moeplan/cost/gemm_shape_model.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/dag/work_shape.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::sched {

/// The kernels `forward`, or with `backward` each one's input and weight
/// gradients (cost::input_gradient_shape, weight_gradient_shape: 2x the FLOPs).
dag::WorkShape gemm_work(const std::vector<cost::GemmShape>& forward, bool backward);

/// The router of `tokens` tokens: [tokens x d_model] x [d_model x E], the GEMM
/// whose 2 t d E FLOPs cost::moe_layer_sizes counts as gating_forward_flops.
dag::WorkShape router_work(const model::ModelSpec& model, double tokens, bool backward);

/// A dense block's FFN of `tokens` tokens against `hidden` columns (ffn_hidden / tp):
/// cost::ffn_forward_gemms of the model's ffn_type.
dag::WorkShape dense_ffn_work(const model::ModelSpec& model, double tokens, double hidden, bool backward);

/// The experts of 1/parts of `sizes`: cost::expert_forward_gemms or
/// expert_backward_gemms, the kernels cost::expert_ffn_time prices by shape.
dag::WorkShape expert_work(const model::ModelSpec& model, const model::ParallelSpec& parallel,
                           const cost::MoeLayerSizes& sizes, bool backward, double parts);

/// An attention task of `flops` FLOPs as cost::attention_task_shape splits it
/// (the split CostModel::attention prices): its Q, K, V, O projections, then
/// the causal core of `queries` queries after `context - queries` earlier tokens.
dag::WorkShape attention_work(const model::ModelSpec& model, std::int64_t queries, std::int64_t context, double flops);

/// `first`'s work with `then`'s GEMMs added after its own (FlowMoE's AT task:
/// the attention and the router, priced as one task).
dag::WorkShape with_gemms(dag::WorkShape first, const dag::WorkShape& then);

}  // namespace moeplan::sched
