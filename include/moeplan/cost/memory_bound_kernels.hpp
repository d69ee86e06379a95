#pragma once
// The memory-bound kernels of a Megatron-Core / Transformer Engine training
// iteration (docs/cost-model.md, "Memory-bound kernels"): the HBM bytes each
// reads and writes, counted from the shapes, per rank and micro-batch. The
// profile's elementwise line prices the bytes (cost_model.hpp); nothing here
// knows a time. GEMMs and the attention core are priced elsewhere.

#include <cstdint>

#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief HBM bytes read + written in a forward and in a backward pass.
struct PassBytes {
  double forward = 0;
  double backward = 0;
};

/// @brief Where a block's tokens are, on one rank, per micro-batch.
struct BlockTokens {
  /// Tokens outside attention and the MLP: micro_batch x seq / cp / tp
  /// (sequence parallelism): what the norms and residual adds see.
  double sequence_tokens = 0;
  /// Tokens the attention sees (micro_batch x seq / cp) with heads / tp.
  double attention_tokens = 0;
  double tp = 1;
};

/// Every block's: its two norms, two residual adds and the rotary embedding of
/// its queries and keys.
PassBytes block_common_bytes(const model::ModelSpec& m, const BlockTokens& t);

/// An MoE block's FFN side: the router's softmax and top-k, the token
/// permutation before the experts and its inverse after them, the routed
/// experts' activation, the shared experts' activation and their sum. `ep`:
/// the expert-parallel group (num_experts / ep local experts).
/// `fused_grouped_mlp`: the routed experts' activation and its gradient run
/// in their GEMMs' epilogues (model::ScheduleSpec::fused_grouped_mlp), no
/// kernel of their own.
PassBytes moe_ffn_bytes(const model::ModelSpec& m, const BlockTokens& t, const MoeLayerSizes& moe, double ep,
                        bool fused_grouped_mlp = false);

/// Megatron-Core's clamp of a GLU's inputs (model::MoeSpec::glu_clamp, GPT-OSS),
/// over the routed experts' token slots: outside its fused activation kernel
/// (megatron/core/fusions/fused_bias_geglu.py, weighted_bias_quick_geglu_impl)
/// the first GEMM's output is split in its gate and linear halves, each
/// clamped by a torch kernel (read f, write f), and the two concatenated
/// again (read 2 f, write 2 f): 8 f elements forward; backward each clamp's
/// gradient reads the gradient and its input and writes the input's gradient
/// (3 f each): 6 f. Zero without a clamp, and under Transformer Engine's fused
/// grouped MLP, whose kernel clamps in its epilogue (`fused_grouped_mlp`).
PassBytes glu_clamp_bytes(const model::ModelSpec& m, const MoeLayerSizes& moe, bool fused_grouped_mlp);

/// A dense block's MLP activation.
PassBytes dense_ffn_bytes(const model::ModelSpec& m, const BlockTokens& t);

/// The first stage's: the word embedding's lookup and its gradient's accumulation.
/// `main_grad_bytes`: each main gradient's bytes (model::main_grad_bytes).
PassBytes embedding_bytes(const model::ModelSpec& m, const BlockTokens& t, double main_grad_bytes);

/// The last stage's, besides its GEMMs: the final norm, and the
/// vocabulary-parallel cross-entropy over attention_tokens x vocab / tp logits,
/// Megatron-Core's unfused kernels or (`fused`) Transformer Engine's.
PassBytes output_layer_bytes(const model::ModelSpec& m, const BlockTokens& t, bool fused);
/// Of output_layer_bytes, the cross-entropy's own (the logits' bytes; the rest is the final norm's).
PassBytes cross_entropy_bytes(const model::ModelSpec& m, const BlockTokens& t, bool fused);

/// Bytes per logit of Megatron-Core's unfused vocabulary-parallel cross-entropy.
inline constexpr double kCrossEntropyForwardBytes = 38.0;
inline constexpr double kCrossEntropyBackwardBytes = 14.0;
/// Bytes per (2-byte) logit of Transformer Engine's fused cross-entropy
/// (NVIDIA/TransformerEngine@e6d97ffc7, 2026-03,
/// transformer_engine/common/triton/cross_entropy.py): forward,
/// online_softmax_kernel reads each logit (2) and cross_entropy_kernel reads it
/// again and writes its gradient in its place (2 + 2); backward,
/// element_mul_kernel scales that gradient by the per-token output gradient in
/// place (read 2, write 2).
inline constexpr double kFusedCrossEntropyForwardBytes = 6.0;
inline constexpr double kFusedCrossEntropyBackwardBytes = 4.0;

/// What the optimizer step updates: fp32 master weights (copied into the
/// 16-bit weights after), their 16-bit remainders beside the weights
/// (model::ScheduleSpec::precision_aware_optimizer), or the 16-bit weights
/// alone (model::ScheduleSpec::master_weights none).
enum class MasterWeights { fp32, remainders, none };
/// The optimizer step on the `params` parameters a rank's shard updates, its
/// moments of `moment_bytes` each.
double optimizer_step_bytes(double params, MasterWeights master = MasterWeights::fp32, double moment_bytes = 4.0);
/// Bytes per parameter of that step (see the definition).
inline constexpr double kAdamStepBytesPerParam = 38.0;

/// Which of a rank's gradient buckets Megatron-Core's DDP multiplies by their
/// gradient_scaling_factor before the reduce-scatter (start_grad_sync: `grad_data
/// *= gradient_scaling_factor` when the factor is not 1).
struct GradientPrescaling {
  bool dense = false;   ///< the non-expert buffer
  bool expert = false;  ///< the routed experts' buffer
};
/// Without average_in_collective both factors are 1 / (dp x cp); with it the
/// dense factor is 1 and the experts' edp / (dp x cp) (distributed/
/// distributed_data_parallel.py, "Compute gradient scaling factors").
GradientPrescaling gradient_prescaling(bool average_in_collective, std::int64_t dp_cp, std::int64_t edp);
/// Bytes of the passes Megatron-Core's DDP makes each iteration over the
/// gradient buffers a rank holds (every parameter of its layers and ends,
/// unsharded; `grad_bytes` a gradient): zero_grad_buffer() writes them, the
/// check_for_nan_in_grad norm reads them (when `nan_check`), and the
/// pre-scaling reads and writes the buckets `scaling` names.
double gradient_buffer_pass_bytes(double dense_params, double expert_params, double grad_bytes, bool nan_check,
                                  GradientPrescaling scaling);

}  // namespace moeplan::cost
