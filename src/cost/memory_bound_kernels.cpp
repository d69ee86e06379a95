#include <moeplan/cost/memory_bound_kernels.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {

double gated_share(const model::FfnType t) { return t == model::FfnType::SwiGlu ? 1.0 : 0.0; }

// An activation over `elements` hidden elements: GELU reads its input and
// writes its output (2 b); SwiGLU reads the gate and the up half (2 x f) and
// writes f (3 b). Backward: GELU reads the input and the output gradient and
// writes the input gradient (3 b); SwiGLU reads both halves and the output
// gradient and writes both halves' gradients (5 b).
PassBytes activation_pass_bytes(model::FfnType type, double elements, double b) {
  const double g = gated_share(type);
  return {(2.0 + g) * elements * b, (3.0 + 2.0 * g) * elements * b};
}

}  // namespace

PassBytes block_common_bytes(const model::ModelSpec& m, const BlockTokens& t) {
  const double b = as_double(m.dtype_bytes);
  const double x = t.sequence_tokens * as_double(m.d_model);  // one hidden state of the rank
  PassBytes out;
  // Two norms (RMSNorm or LayerNorm, Transformer Engine's kernels): forward
  // reads x and writes y; backward reads x and dy and writes dx (the per-token
  // statistics and the weight gradient's partial sums are O(tokens), left out).
  out.forward += 2 * 2.0 * x * b;
  out.backward += 2 * 3.0 * x * b;
  // Two residual adds (Megatron's fused bias-dropout-add: dropout 0 in
  // current recipes): forward reads the residual and the branch, writes the
  // sum; backward, the residual's gradient and the branch's meet in one add.
  out.forward += 2 * 3.0 * x * b;
  out.backward += 2 * 3.0 * x * b;
  // Rotary embedding (Transformer Engine's fused RoPE) of the queries and keys
  // of this rank's heads, read and written; its backward rotates the
  // gradients the same way. MLA rotates only the rope part: h query heads and
  // one key shared by the heads, qk_rope_head_dim wide. Models with learned
  // positions (max_position_embeddings) have none.
  if (m.max_position_embeddings == 0) {
    const double rotated =
        m.mla ? (as_double(m.num_heads) / t.tp + 1.0) * as_double(m.mla->qk_rope_head_dim)
              : as_double(m.num_heads + m.num_kv_heads) / t.tp * as_double(m.head_dim);
    out.forward += 2.0 * t.attention_tokens * rotated * b;
    out.backward += 2.0 * t.attention_tokens * rotated * b;
  }
  return out;
}

PassBytes moe_ffn_bytes(const model::ModelSpec& m, const BlockTokens& t, const MoeLayerSizes& moe, double ep,
                        bool fused_grouped_mlp) {
  const double b = as_double(m.dtype_bytes);
  const double d = as_double(m.d_model);
  const double tokens = moe.tokens_per_rank;
  const double copies = tokens * as_double(m.moe.top_k);  // the top-k copies this rank sends
  PassBytes out;
  // Router: softmax (or sigmoid) and top-k over E fp32 scores per token
  // (Megatron-Core computes the routing in fp32): forward writes and reads the
  // probabilities and reads them for top-k, 12 B per score; backward reads the
  // probabilities and their gradient and writes the scores' gradient, 12 B.
  const double scores = tokens * as_double(m.moe.num_experts);
  out.forward += 12.0 * scores;
  out.backward += 12.0 * scores;
  // Permutation (Megatron-Core's alltoall dispatcher): the top-k copies of each
  // token gathered into expert order before the dispatch, read and written
  // (2 b per element); after it, the received copies sorted by local expert
  // when the rank holds more than one. The inverse after the experts: the
  // sort undone, then each token's k copies read, weighted by their
  // probabilities and summed into one (k + 1 elements per token). Backward
  // mirrors each (a gather's gradient is the sum, and the sum's the gather).
  const double local_experts = as_double(m.moe.num_experts) / ep;
  const double sort = local_experts > 1 ? 2.0 * moe.expert_slots * d * b : 0.0;
  const double permute = 2.0 * copies * d * b + sort;
  const double unpermute = sort + (copies + tokens) * d * b;
  out.forward += permute + unpermute;
  out.backward += permute + unpermute;
  // The routed experts' activation over their token slots (with etp the slots
  // gathered over etp and the hidden split over it: the same elements).
  // Fused grouped MLP: the first GEMM's epilogue applies it to the
  // accumulators, the second's input-gradient epilogue its gradient; no
  // kernel reads or writes HBM for them (the GEMMs' own writes are priced
  // with the GEMMs).
  if (!fused_grouped_mlp) {
    const PassBytes routed =
        activation_pass_bytes(m.moe.expert_type, moe.expert_slots * as_double(m.moe.expert_ffn_hidden), b);
    out.forward += routed.forward;
    out.backward += routed.backward;
  }
  const PassBytes clamp = glu_clamp_bytes(m, moe, fused_grouped_mlp);
  out.forward += clamp.forward;
  out.backward += clamp.backward;
  // Shared experts: an MLP on every token of the attention side (split over
  // tp), its output added to the routed experts' (read 2, write 1).
  if (m.moe.num_shared_experts > 0) {
    const PassBytes shared = activation_pass_bytes(
        m.moe.expert_type,
        t.attention_tokens * as_double(m.moe.num_shared_experts * m.moe.shared_expert_ffn_hidden) / t.tp, b);
    out.forward += shared.forward + 3.0 * tokens * d * b;
    out.backward += shared.backward + 3.0 * tokens * d * b;
  }
  return out;
}

PassBytes glu_clamp_bytes(const model::ModelSpec& m, const MoeLayerSizes& moe, bool fused_grouped_mlp) {
  if (m.moe.glu_clamp <= 0 || fused_grouped_mlp) return {};
  // One f-wide tensor over the slots, in bytes: the unit of the counts above.
  const double f_bytes = moe.expert_slots * as_double(m.moe.expert_ffn_hidden) * as_double(m.dtype_bytes);
  return {8.0 * f_bytes, 6.0 * f_bytes};
}

PassBytes dense_ffn_bytes(const model::ModelSpec& m, const BlockTokens& t) {
  // The MLP's input is gathered over tp (sequence parallelism) and its hidden split over it.
  return activation_pass_bytes(m.ffn_type, t.attention_tokens * as_double(m.ffn_hidden) / t.tp, as_double(m.dtype_bytes));
}

PassBytes embedding_bytes(const model::ModelSpec& m, const BlockTokens& t, double main_grad_bytes) {
  const double b = as_double(m.dtype_bytes);
  // Vocabulary-parallel lookup: each tp rank reads the rows of its part of the
  // vocabulary and writes a full hidden state per token (zeros elsewhere),
  // reduced over tp.
  const double x = t.attention_tokens * as_double(m.d_model);
  // Backward: the weight's gradient is a dense tensor of the rank's whole
  // shard, vocab / tp x d. PyTorch's embedding_dense_backward_cuda
  // (aten/src/ATen/native/cuda/Embedding.cu) allocates it with at::zeros (b
  // written per element) and adds every token's gradient into its row (the
  // token's b read, the row's b read and written); Megatron-Core's DDP hook
  // then adds it into the main gradient, param.main_grad.add_(param.grad)
  // (distributed_data_parallel.py, _make_backward_post_hook: b read, the main
  // gradient's bytes read and written). The embedding has no fused wgrad
  // accumulation to skip that add, unlike the linear layers.
  const double shard = as_double(m.vocab_size) / t.tp * as_double(m.d_model);
  return {2.0 * x * b, shard * (2.0 * b + 2.0 * main_grad_bytes) + 3.0 * x * b};
}

PassBytes output_layer_bytes(const model::ModelSpec& m, const BlockTokens& t, bool fused) {
  const double b = as_double(m.dtype_bytes);
  const double x = t.sequence_tokens * as_double(m.d_model);
  // The final norm (as a block's), then Megatron-Core's unfused
  // vocab_parallel_cross_entropy (tensor_parallel/cross_entropy.py) per logit:
  // forward, the cast to fp32 (read 2, write 4), the max (read 4), the max
  // subtracted in place (8), exp in place (8), the sum (4) and the division
  // into the softmax it keeps (8): 38 B; backward, the softmax times the
  // output gradient in place (8) and the cast's gradient back to bf16 (read 4,
  // write 2): 14 B. (At 2-byte logits; the casts' bytes assume them.)
  // Fused (Transformer Engine): the bytes of its three kernels (the header);
  // those counts are for 2-byte logits, as the unfused ones are.
  const PassBytes loss = cross_entropy_bytes(m, t, fused);
  return {2.0 * x * b + loss.forward, 3.0 * x * b + loss.backward};
}

PassBytes cross_entropy_bytes(const model::ModelSpec& m, const BlockTokens& t, bool fused) {
  const double logits = t.attention_tokens * as_double(m.vocab_size) / t.tp;
  if (fused) return {kFusedCrossEntropyForwardBytes * logits, kFusedCrossEntropyBackwardBytes * logits};
  return {kCrossEntropyForwardBytes * logits, kCrossEntropyBackwardBytes * logits};
}

double optimizer_step_bytes(double params, MasterWeights master, double moment_bytes) {
  // Megatron-Core's distributed optimizer on its shard: the gradient norm for
  // clipping reads the fp32 gradients (4 B); Adam (Transformer Engine's /
  // Apex's multi-tensor FusedAdam) reads the fp32 master weight, gradient and
  // both moments (16 B) and writes the weight and moments (12 B); the updated
  // master weights are copied into the bf16 model weights (read 4, write 2).
  if (master == MasterWeights::fp32) return kAdamStepBytesPerParam * params;
  // Without master weights (Megatron-FSDP's main params "auto"; PyTorch's
  // Adam on a bf16 model): the norm reads the 16-bit gradient (2), the update
  // reads the weight, gradient and both moments and writes the weight and
  // both moments (2 + 2 + 2 + 4 moment bytes).
  if (master == MasterWeights::none) return (2.0 + 2.0 + 2.0 + 2.0 + 4.0 * moment_bytes) * params;
  // Precision-aware (TE's FusedAdam with store_param_remainders): the fp32
  // master weight is the bf16 weight and its 16-bit remainder, read (2 + 2)
  // and written (2 + 2) by the update itself, no copy after; the gradient
  // norm (4) and the gradient (4) are read, and both moments read and written.
  return (4.0 + 4.0 + 8.0 + 4.0 * moment_bytes) * params;
}

GradientPrescaling gradient_prescaling(bool average_in_collective, std::int64_t dp_cp, std::int64_t edp) {
  MOEPLAN_CHECK(dp_cp >= 1 && edp >= 1, "data-parallel groups of at least one rank");
  // The factors (Megatron-Core DDP): 1 / (dp x cp) for both buffers, or with
  // average_in_collective (the collective averages) 1 for the dense buffer and
  // edp / (dp x cp) for the experts'. A factor of 1 skips the multiplication.
  if (!average_in_collective) return {dp_cp > 1, dp_cp > 1};
  return {false, edp != dp_cp};
}

double gradient_buffer_pass_bytes(double dense_params, double expert_params, double grad_bytes, bool nan_check,
                                  GradientPrescaling scaling) {
  MOEPLAN_CHECK(dense_params >= 0 && expert_params >= 0 && grad_bytes > 0, "a gradient buffer of held parameters");
  const double all = (dense_params + expert_params) * grad_bytes;
  // zero_grad_buffer(): grad_data.zero_() writes every bucket (1 x).
  double bytes = all;
  // check_for_nan_in_grad: grad_data.norm(p=2) of every bucket reads it (1 x).
  if (nan_check) bytes += all;
  // The pre-scaling: grad_data *= factor reads and writes a bucket (2 x).
  if (scaling.dense) bytes += 2.0 * dense_params * grad_bytes;
  if (scaling.expert) bytes += 2.0 * expert_params * grad_bytes;
  return bytes;
}

}  // namespace moeplan::cost
