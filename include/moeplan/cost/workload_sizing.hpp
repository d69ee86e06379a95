#pragma once
// How much work each task carries: bytes for communication, FLOPs for
// compute, per rank and per micro-batch, from the model, the parallel mapping
// and the workload. Every formula cites its source; docs/cost-model.md lists them.

#include <cstdint>

#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// FoldMoE Eq. 5 (after Hoffmann et al. 2022): FLOPs of l tokens attending a
/// c-token context (the slice included), whole model width:
/// (4H + 3h) l c + 8 H^2 l, H = d_model, h = heads.
double attention_flops(const model::ModelSpec& model, double l_tokens, double c_context);

/// Causal self-attention of a whole L-token sequence as FoldMoE's ideal:
/// sum over i = 1..L of FLOPs(1, i) = (4H + 3h) L (L + 1) / 2 + 8 H^2 L.
double causal_attention_flops(const model::ModelSpec& model, double seq_tokens);

/// @brief Work of one MoE layer for one micro-batch on one rank.
struct MoeLayerSizes {
  double tokens_per_rank = 0;          ///< tokens entering the MoE layer on this rank
  double dispatch_bytes = 0;           ///< A2A dispatch, nccl-tests alltoall size per rank
  double combine_bytes = 0;            ///< A2A combine, same volume back
  double etp_allgather_bytes = 0;      ///< ESP/ETP AllGather output per rank (0 when etp = 1)
  double etp_reducescatter_bytes = 0;  ///< ESP/ETP ReduceScatter input per rank
  double expert_forward_flops = 0;     ///< expert GEMMs on this rank
  double expert_backward_flops = 0;    ///< 2x forward (weight and input gradients)
  double gating_forward_flops = 0;     ///< router GEMM d x E
};

/// @brief Work of one attention layer for one micro-batch on one rank.
struct AttentionLayerSizes {
  double tokens_per_rank = 0;         ///< tokens this rank holds outside attention (after SP/CP split)
  double forward_flops = 0;           ///< causal attention of the micro-batch / (tp * cp)
  double backward_flops = 0;          ///< 2x forward
  double tp_allgather_bytes = 0;      ///< with sequence parallelism: AG before attention (output size)
  double tp_reducescatter_bytes = 0;  ///< with sequence parallelism: RS after attention (input size)
  double tp_allreduce_bytes = 0;      ///< without sequence parallelism: AR after attention
};

/// Tokens one rank feeds into a layer per micro-batch: micro_batch x seq / cp,
/// and / tp with sequence parallelism (Korthikanti et al. 2023).
double tokens_per_rank(const model::ModelSpec& model, const model::ParallelSpec& parallel,
                       const model::WorkloadSpec& workload);

MoeLayerSizes moe_layer_sizes(const model::ModelSpec& model, const model::ParallelSpec& parallel,
                              const model::WorkloadSpec& workload);

AttentionLayerSizes attention_layer_sizes(const model::ModelSpec& model, const model::ParallelSpec& parallel,
                                          const model::WorkloadSpec& workload);

/// Dense gradient bytes per block per rank (FlowMoE section 4.2: MHA + gate,
/// 4M^2 + ME parameters): attention weights / tp + router, x dtype_bytes.
double dense_gradient_bytes_per_block(const model::ModelSpec& model, const model::ParallelSpec& parallel);

/// Expert gradient bytes per MoE block per rank: experts / ep, each / etp, x dtype_bytes.
double expert_gradient_bytes_per_block(const model::ModelSpec& model, const model::ParallelSpec& parallel);

}  // namespace moeplan::cost
