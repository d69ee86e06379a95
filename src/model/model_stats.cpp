#include <moeplan/model/model_stats.hpp>

#include <algorithm>
#include <cmath>

namespace moeplan::model {

AttentionParams attention_matmul_weights(const ModelSpec& m) {
  AttentionParams w;
  if (!m.mla) {
    // Q and O are d x (heads * head_dim); K and V are d x (kv_heads * head_dim).
    w.split = 2 * m.d_model * m.num_heads * m.head_dim + 2 * m.d_model * m.num_kv_heads * m.head_dim;
    return w;
  }
  // DeepSeek-V2 (arXiv 2405.04434) Eqs. 9-14 and modeling_deepseek.py: Q is
  // d -> q_lora -> heads x (nope + rope), or d -> heads x (nope + rope) without
  // q_lora_rank; K/V is d -> kv_lora + rope (the shared rope key), then
  // kv_lora -> heads x (nope + v); O is heads x v -> d. Megatron-Core holds the
  // down-projections whole on every tp rank (TELinear, parallel_mode
  // "duplicated") and splits the up-projections and O by heads.
  const MlaSpec& a = *m.mla;
  const std::int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
  if (a.q_lora_rank) {
    w.replicated += m.d_model * *a.q_lora_rank;
    w.split += *a.q_lora_rank * m.num_heads * qk;
  } else {
    w.split += m.d_model * m.num_heads * qk;
  }
  w.replicated += m.d_model * (a.kv_lora_rank + a.qk_rope_head_dim);
  w.split += a.kv_lora_rank * m.num_heads * (a.qk_nope_head_dim + a.v_head_dim);
  w.split += m.num_heads * a.v_head_dim * m.d_model;
  return w;
}

AttentionParams attention_params(const ModelSpec& m) {
  AttentionParams p = attention_matmul_weights(m);
  // GPT-OSS's sinks: one learned logit per head, split over tp with the heads.
  if (m.attention_sinks) p.split += m.num_heads;
  if (m.mla) {
    // RMSNorms of the latents (q_a_layernorm, kv_a_layernorm), one scale per element.
    p.replicated += m.mla->q_lora_rank.value_or(0) + m.mla->kv_lora_rank;
    return p;
  }
  const std::int64_t q_width = m.num_heads * m.head_dim;
  const std::int64_t kv_width = m.num_kv_heads * m.head_dim;
  if (m.linear_bias)
    p.split += q_width + 2 * kv_width + m.d_model;
  else if (m.qkv_bias)
    p.split += q_width + 2 * kv_width;
  return p;
}

std::int64_t attention_params_per_layer(const ModelSpec& m) { return attention_params(m).total(); }

double attention_params_per_rank(const ModelSpec& m, std::int64_t tp) {
  const AttentionParams p = attention_params(m);
  return static_cast<double>(p.split) / static_cast<double>(tp) + static_cast<double>(p.replicated);
}

std::int64_t ffn_params(std::int64_t d_model, std::int64_t hidden, FfnType type, bool bias) {
  // GELU FFN: up (d x h) and down (h x d). SwiGLU: gate and up (d x h), down (h x d).
  if (type == FfnType::GeluFfn) return 2 * d_model * hidden + (bias ? hidden + d_model : 0);
  return 3 * d_model * hidden + (bias ? 2 * hidden + d_model : 0);
}

std::int64_t norm_params(const ModelSpec& m) { return m.norm_type == NormType::LayerNorm ? 2 * m.d_model : m.d_model; }

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  c.embedding = m.vocab_size * m.d_model * (m.tie_embeddings ? 1 : 2) + m.max_position_embeddings * m.d_model;
  const std::int64_t expert = ffn_params(m.d_model, m.moe.expert_ffn_hidden, m.moe.expert_type, m.linear_bias);
  const std::int64_t shared = m.moe.num_shared_experts *
                              ffn_params(m.d_model, m.moe.shared_expert_ffn_hidden, m.moe.expert_type, m.linear_bias);
  // Router d x E; Qwen2-MoE's shared-expert gate d x 1 (modeling_qwen2_moe.py, shared_expert_gate).
  const std::int64_t router = m.d_model * m.moe.num_experts + (m.moe.shared_expert_gate ? m.d_model : 0);
  const std::int64_t common = attention_params_per_layer(m) + 2 * norm_params(m);
  c.total = c.embedding + norm_params(m);  // final norm
  c.active_per_token = c.total;
  // Multi-token prediction modules (DeepSeek-V3, Megatron-Core's MTP): the
  // hidden state's and the embedding's norms, the 2d x d projection, one
  // block and its final norm; the embedding and LM head are shared.
  if (m.mtp_num_layers > 0) {
    const bool moe_block = !m.is_dense();
    const std::int64_t own = 3 * norm_params(m) + 2 * m.d_model * m.d_model + common;
    const std::int64_t ffn = moe_block ? router + m.moe.num_experts * expert + shared
                                       : ffn_params(m.d_model, m.ffn_hidden, m.ffn_type, m.linear_bias);
    const std::int64_t ffn_active = moe_block ? router + m.moe.top_k * expert + shared : ffn;
    c.total += m.mtp_num_layers * (own + ffn);
    c.active_per_token += m.mtp_num_layers * (own + ffn_active);
  }
  for (std::int64_t layer = 0; layer < m.num_layers; ++layer) {
    if (m.moe_layer[static_cast<std::size_t>(layer)]) {
      c.total += common + router + m.moe.num_experts * expert + shared;
      c.active_per_token += common + router + m.moe.top_k * expert + shared;
    } else {
      const std::int64_t dense = ffn_params(m.d_model, m.ffn_hidden, m.ffn_type, m.linear_bias);
      c.total += common + dense;
      c.active_per_token += common + dense;
    }
  }
  return c;
}

double forward_matmul_flops_per_token(const ModelSpec& m) {
  // Weights only (no biases or norms): 2 FLOPs per multiply-add.
  const double d = static_cast<double>(m.d_model);
  const double attention = static_cast<double>(attention_matmul_weights(m).total());
  const double gemms_per_expert = m.moe.expert_type == FfnType::GeluFfn ? 2.0 : 3.0;
  const double gemms_per_dense = m.ffn_type == FfnType::GeluFfn ? 2.0 : 3.0;
  const double moe =
      d * static_cast<double>(m.moe.num_experts) +  // router
      (m.moe.shared_expert_gate ? d : 0.0) +         // Qwen2-MoE's shared-expert gate
      static_cast<double>(m.moe.top_k) * gemms_per_expert * d * static_cast<double>(m.moe.expert_ffn_hidden) +
      static_cast<double>(m.moe.num_shared_experts) * gemms_per_expert * d *
          static_cast<double>(m.moe.shared_expert_ffn_hidden);
  const double dense = gemms_per_dense * d * static_cast<double>(m.ffn_hidden);
  double weights = d * static_cast<double>(m.vocab_size);  // LM head
  for (std::int64_t layer = 0; layer < m.num_layers; ++layer)
    weights += attention + (m.moe_layer[static_cast<std::size_t>(layer)] ? moe : dense);
  return 2.0 * weights;
}

double forward_flops_per_token(const ModelSpec& m, std::int64_t seq_len) {
  // QK^T (2 x head_dim) and AV (2 x value_head_dim) FLOPs per head per context
  // token; a causal mask makes the average context seq_len / 2 (the pairs
  // L (L + 1) / 2 over L, less the diagonal's half). A block with a sliding
  // window of w sees at most w: its pairs w L - w (w - 1) / 2 (L >= w) over L,
  // less the same half.
  // A block with chunks of C tokens (Llama 4) computes q C (C + 1) / 2 +
  // r (r + 1) / 2 pairs (q = L div C full chunks, r = L mod C), over L, less
  // the same half.
  const double seq = static_cast<double>(seq_len);
  const double windows = static_cast<double>(m.num_window_layers());
  const double w = std::min(static_cast<double>(m.sliding_window), seq);
  const double window_context = windows > 0 ? (w * seq - w * (w - 1.0) / 2.0) / seq - 0.5 : 0.0;
  const double chunks = static_cast<double>(m.num_chunk_layers());
  double chunk_context = 0.0;
  if (chunks > 0) {
    const double size = static_cast<double>(m.attention_chunk_size);
    const double full = std::floor(seq / size), rest = seq - full * size;
    chunk_context = (full * size * (size + 1.0) / 2.0 + rest * (rest + 1.0) / 2.0) / seq - 0.5;
  }
  const double per_context_token = 2.0 * static_cast<double>(m.num_heads * (m.head_dim + m.value_head_dim()));
  const double attention_context =
      per_context_token * ((static_cast<double>(m.num_layers) - windows - chunks) * seq / 2.0 +
                           windows * window_context + chunks * chunk_context);
  return forward_matmul_flops_per_token(m) + attention_context;
}

}  // namespace moeplan::model
