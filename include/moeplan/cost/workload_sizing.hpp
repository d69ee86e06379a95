#pragma once
// How much work each task carries: bytes for communication, FLOPs for
// compute, per rank and per micro-batch, from the model, the parallel mapping
// and the workload. Every formula cites its source; docs/cost-model.md lists them.

#include <cstdint>

#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// Query-key pairs a causal kernel (FlashAttention, cuDNN SDPA) computes for
/// l queries at the end of a c-token context: the l x (c - l) block of earlier
/// keys and the l (l + 1) / 2 triangle of their own. Slices of any slicing of a
/// sequence add up to the whole sequence's L (L + 1) / 2.
double causal_pairs(double l_queries, double c_context);

/// The same under a sliding window of w tokens (each query sees itself and the
/// w - 1 before it): the query at 1-based position j computes min(j, w) pairs.
/// With w >= c it is causal_pairs.
double windowed_pairs(double l_queries, double c_context, double window);

/// The same under chunked attention of C-token chunks (Llama 4): the sequence
/// is cut at multiples of C and the query at 1-based position j sees the keys
/// of its own chunk up to itself, ((j - 1) mod C) + 1 pairs. Over positions
/// 1..n that is q C (C + 1) / 2 + r (r + 1) / 2 (q = n div C full chunks, r = n
/// mod C in the last, partial one); l queries at the end of c tokens compute
/// the difference at n = c and n = c - l. With C >= c it is causal_pairs.
double chunked_pairs(double l_queries, double c_context, double chunk);

/// Score and value FLOPs of those pairs, whole model width: per pair
/// 4 h k (QK^T and AV, 2 FLOPs per multiply-add) + 3 h (softmax), FoldMoE Eq. 5's
/// (4H + 3h) with H = h k. With MLA, 2 h qk + 2 h v + 3 h (qk = nope + rope, v = v_head_dim).
/// With a window > 0, over windowed_pairs (a sliding-window block); with a
/// chunk > 0, over chunked_pairs (a chunked-attention block); never both.
double attention_core_flops(const model::ModelSpec& model, double l_queries, double c_context, double window = 0,
                            double chunk = 0);

/// Q, K, V and O projection FLOPs of `tokens` tokens: 2 x (2 d h k + 2 d g k)
/// per token (Eq. 5's 8 H^2 without GQA; g = KV heads); with MLA, 2 x its
/// down- and up-projection and O weights (model::attention_matmul_weights).
double attention_projection_flops(const model::ModelSpec& model, double tokens);

/// One rule for every schedule: l queries at the end of a c-token context cost
/// their causal pairs plus their projections. FoldMoE's Eq. 5 ((4H + 3h) l c +
/// 8 H^2 l) is the paper's estimate for choosing slices; a causal kernel skips
/// the masked triangle whether or not the sequence is sliced (foldmoe.md,
/// "Combine with FlashAttention").
double attention_flops(const model::ModelSpec& model, double l_queries, double c_context);

/// Causal self-attention of a whole L-token sequence: attention_flops(L, L).
double causal_attention_flops(const model::ModelSpec& model, double seq_tokens);

/// attention_flops of l queries of `sequences` sequences, on one rank:
/// / (tp x cp), plus, with tp > 1 and no sequence parallelism, the (1 - 1/tp)
/// share of MLA's down-projections that every tp rank runs whole.
double attention_flops_per_rank(const model::ModelSpec& model, const model::ParallelSpec& parallel, double sequences,
                                double l_queries, double c_context);

/// @brief Work of one MoE layer for one micro-batch on one rank.
struct MoeLayerSizes {
  double tokens_per_rank = 0;          ///< tokens entering the MoE layer on this rank
  double dispatch_bytes = 0;           ///< A2A dispatch, nccl-tests alltoall size per rank
  double combine_bytes = 0;            ///< A2A combine, same volume back
  double etp_allgather_bytes = 0;      ///< ESP/ETP AllGather output per rank (0 when etp = 1)
  double etp_reducescatter_bytes = 0;  ///< ESP/ETP ReduceScatter input per rank
  double expert_slots = 0;             ///< token slots this rank's routed experts receive (before the ETP gather)
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
