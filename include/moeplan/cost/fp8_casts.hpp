#pragma once
// What a Transformer Engine FP8 recipe costs beside its GEMMs (docs/cost-model.md,
// "FP8"): before every FP8 GEMM its BF16 operands are quantized by memory-bound
// kernels, priced on the profile's elementwise line by the bytes they move.
// Which GEMMs run in FP8 is Megatron-Core's choice under --fp8-format: the
// linear layers of the transformer blocks (attention projections, dense and
// expert FFNs, shared experts); not the attention core, the router or the LM head.

#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/gemm_shape_model.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief Bytes one cast kernel moves per element it quantizes.
struct CastBytesPerElement {
  double activation = 0;  ///< a GEMM input (forward) or an output gradient (backward)
  double weight = 0;      ///< a weight, cast once per iteration (cached across micro-batches)
};

/// Per recipe. Every recipe writes a row-wise and a column-wise (transposed)
/// FP8 copy, one byte each, after reading the two-byte BF16 element (TE's
/// cast-transpose; the GEMMs of the backward pass read the other orientation):
/// 4 B. Current (tensorwise) scaling first reads the tensor once more for its
/// amax: 6 B. Delayed scaling takes the amax of earlier steps inside the cast:
/// 4 B. Block scales add one scale per block per copy: 4 B (fp32) per 128
/// elements for blockwise (1 x 128 / 128 x 128 blocks), 1 B (E8M0) per 32 for
/// MXFP8, twice each. Bf16: none (0).
CastBytesPerElement fp8_cast_bytes(model::Precision precision);

/// @brief Elements the casts of one layer pass quantize.
struct CastElements {
  double inputs = 0;     ///< forward: each FP8 GEMM's A (m x k)
  double gradients = 0;  ///< backward: each FP8 GEMM's output gradient dC (m x n)
  double weights = 0;    ///< each FP8 GEMM's B (k x n)
};

/// Adds what the casts of these forward GEMMs quantize (batch x m k, m n, k n).
void add_cast_elements(CastElements& elements, const std::vector<GemmShape>& forward_gemms);

/// Takes from `elements` what Transformer Engine's fused grouped MLP
/// (model::ScheduleSpec::fused_grouped_mlp; docs/cost-model.md, "Fused grouped
/// MLP") does not cast of the routed experts' gated FFN, `routed_gemms` (gate,
/// up, down, as routed_expert_forward_gemms gives them): down's input, which
/// the gate and up GEMM's epilogue writes in MXFP8 after the activation, and
/// gate's and up's output gradients, which down's input-gradient epilogue
/// writes quantized after the activation's gradient. The rest stays: the
/// tokens' cast before the first GEMM, the output gradient's before down's
/// backward, the weights'.
void remove_fused_grouped_mlp_casts(CastElements& elements, const std::vector<GemmShape>& routed_gemms);

/// @brief The casts' time of one layer pass of one micro-batch.
struct CastTimes {
  Milliseconds forward;   ///< the inputs, plus 1 / micro_batches of the weights
  Milliseconds backward;  ///< the output gradients
};

/// Both on the profile's elementwise line (an input error naming the profile
/// when it has none). The weights' cast, once per iteration, is spread over the
/// micro-batches' forward passes. Zero for bf16.
CastTimes fp8_cast_times(const CostModel& costs, model::Precision precision, const CastElements& elements,
                         double micro_batches);

/// The linear layers of one attention block on one tensor-parallel rank, as
/// forward GEMMs over `tokens` tokens (those of the micro-batch on this cp rank;
/// Megatron-Core under sequence parallelism): MHA/GQA a fused QKV [tokens x d]
/// x [d x (heads + 2 kv_heads) head_dim / tp] and the output projection; MLA
/// the down-projections on tokens / tp (held whole, run before the latents are
/// gathered), the up-projections and the output projection split by heads.
/// Their FLOPs sum to attention_projection_flops(model, tokens) / tp.
std::vector<GemmShape> attention_linear_gemms(const model::ModelSpec& model, double tokens, double tp);

}  // namespace moeplan::cost
