#pragma once
// The ends of a Megatron-Core model (docs/cost-model.md, "The model's ends"):
// the word embedding on the first pipeline stage; the final norm, the output
// layer (LM head) and the cross-entropy loss on the last, per rank and
// micro-batch. Priced by the profile: the LM head's GEMMs by shape (bf16
// under every FP8 recipe, as Transformer Engine leaves the output layer), the
// memory-bound kernels on the elementwise line (memory_bound_kernels.hpp),
// the tensor-parallel collectives on the profile's lines.

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/memory_bound_kernels.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief One micro-batch's ends, per direction (ms), and the LM head's FLOPs.
struct EndTimes {
  double first_forward_ms = 0;  ///< the embedding, on the first virtual stage
  double first_backward_ms = 0;
  double last_forward_ms = 0;   ///< final norm, LM head and loss, on the last virtual stage
  double last_backward_ms = 0;
  double head_forward_flops = 0;  ///< 2 x tokens x d x vocab / tp
};

/// `tp_group`: the shape of the tensor-parallel group the vocabulary is split
/// over (a group of one moves nothing). `fused_cross_entropy`: the loss on
/// Transformer Engine's fused kernels (model::ScheduleSpec::cross_entropy_fusion).
/// `main_grad_bytes`: each main gradient's bytes (model::main_grad_bytes).
EndTimes price_model_ends(const CostModel& costs, const model::ModelSpec& m, const BlockTokens& tokens,
                          const GroupShape& tp_group, bool fused_cross_entropy, double main_grad_bytes);

}  // namespace moeplan::cost
