#pragma once
// The expert FFN GEMMs of one MoE layer pass on one rank, priced by shape when
// the profile has a GEMM shape model (docs/cost-model.md, "GEMM shape model"),
// else by the gemm line on their FLOPs exactly as before.

#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/gemm_shape_model.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// One FFN's forward kernels, `batch` products of each: gemms - 1 of
/// [rows x d] x [d x hidden] (up; and gate for SwiGLU: 2 or 3 GEMMs by `type`),
/// then [rows x hidden] x [hidden x d] (down). None when batch <= 0.
std::vector<GemmShape> ffn_forward_gemms(model::FfnType type, double rows, double d_model, double hidden, double batch,
                                         double element_bytes);

/// The forward GEMM kernels of a layer's experts for 1/parts of its token
/// slots: the routed experts as one grouped GEMM per FFN matrix over the
/// E / ep local experts, each with rows = slots x etp / (E / ep) (the mean
/// expert: under uneven routing the rank's slots are spread evenly over its
/// experts) and hidden / etp columns; the shared experts as another, rows =
/// the rank's tokens, their full hidden (the FLOP-equivalent shape of
/// workload_sizing's shared-expert FLOPs). Per FFN matrix: up (and gate)
/// [rows x d] x [d x hidden], down [rows x hidden] x [hidden x d].
std::vector<GemmShape> expert_forward_gemms(const model::ModelSpec& model, const model::ParallelSpec& parallel,
                                            const MoeLayerSizes& sizes, double parts);

/// Of those, the routed experts' alone (the first kernels expert_forward_gemms gives).
std::vector<GemmShape> routed_expert_forward_gemms(const model::ModelSpec& model, const model::ParallelSpec& parallel,
                                                   const MoeLayerSizes& sizes, double parts);

/// The kernels of the backward pass of those: per forward GEMM its input and
/// weight gradients (gemm_shape_model.hpp), 2x the forward FLOPs, the weight
/// gradients added into main gradients of `main_grad_bytes` an element.
std::vector<GemmShape> expert_backward_gemms(const model::ModelSpec& model, const model::ParallelSpec& parallel,
                                             const MoeLayerSizes& sizes, double parts, double main_grad_bytes = 4.0);

/// The expert FFN time of 1/parts of a layer pass: with a shape model, the sum
/// of CostModel::gemm over the kernels above; without, expert_ffn_time on
/// (backward ? sizes.expert_backward_flops : sizes.expert_forward_flops) / parts.
/// With fp8 every one of those GEMMs has FP8 operands (Transformer Engine's
/// grouped GEMMs under an FP8 recipe): the gemm_fp8 line, or the shape model's FP8 peak.
/// `main_grad_bytes`: the main gradients' element (weight_gradient_shape).
Milliseconds expert_ffn_time(const CostModel& costs, const model::ModelSpec& model,
                             const model::ParallelSpec& parallel, const MoeLayerSizes& sizes, bool backward,
                             double parts, bool fp8 = false, double main_grad_bytes = 4.0);

/// @brief Linear layers' GEMMs on one rank, forward and backward.
struct LinearPassTimes {
  Milliseconds forward;
  Milliseconds backward;
};
/// A dense block's FFN on one rank.
using DenseFfnTimes = LinearPassTimes;

/// The forward GEMMs `forward` (each with FP8 operands when fp8) and their
/// backward: with a shape model the sum of CostModel::gemm over them and, for
/// the backward, over each one's input and weight gradients; without, the
/// gemm line (gemm_fp8 with fp8) on their FLOPs, backward twice that.
/// `main_grad_bytes`: the main gradients' element (weight_gradient_shape).
LinearPassTimes linear_pass_times(const CostModel& costs, std::vector<GemmShape> forward, bool fp8,
                                  double main_grad_bytes = 4.0);

/// A dense block's FFN over `tokens` rows, its hidden split over `tp`
/// (Megatron's column- and row-parallel MLP): with a shape model the sum of
/// CostModel::gemm over ffn_forward_gemms (backward: each GEMM's input and
/// weight gradients); without, the gemm line (gemm_fp8 with fp8) on the
/// forward FLOPs, backward twice that. `main_grad_bytes`: the main
/// gradients' element (weight_gradient_shape).
DenseFfnTimes dense_ffn_times(const CostModel& costs, const model::ModelSpec& model, double tokens, double tp,
                              bool fp8 = false, double main_grad_bytes = 4.0);

}  // namespace moeplan::cost
