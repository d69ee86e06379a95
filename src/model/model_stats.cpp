#include <moeplan/model/model_stats.hpp>

namespace moeplan::model {

std::int64_t attention_params_per_layer(const ModelSpec& m) {
  const std::int64_t q_width = m.num_heads * m.head_dim;
  const std::int64_t kv_width = m.num_kv_heads * m.head_dim;
  // Q and O are d x (heads * head_dim); K and V are d x (kv_heads * head_dim).
  std::int64_t params = 2 * m.d_model * q_width + 2 * m.d_model * kv_width;
  if (m.linear_bias)
    params += q_width + 2 * kv_width + m.d_model;
  else if (m.qkv_bias)
    params += q_width + 2 * kv_width;
  return params;
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
  const std::int64_t router = m.d_model * m.moe.num_experts;
  const std::int64_t common = attention_params_per_layer(m) + 2 * norm_params(m);
  c.total = c.embedding + norm_params(m);  // final norm
  c.active_per_token = c.total;
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
  const double q_width = static_cast<double>(m.num_heads * m.head_dim);
  const double kv_width = static_cast<double>(m.num_kv_heads * m.head_dim);
  const double d = static_cast<double>(m.d_model);
  const double attention = 2.0 * d * q_width + 2.0 * d * kv_width;
  const double gemms_per_expert = m.moe.expert_type == FfnType::GeluFfn ? 2.0 : 3.0;
  const double gemms_per_dense = m.ffn_type == FfnType::GeluFfn ? 2.0 : 3.0;
  const double moe =
      d * static_cast<double>(m.moe.num_experts) +  // router
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
  // QK^T and AV: 2 * 2 * context * heads * head_dim FLOPs per layer per token;
  // a causal mask makes the average context seq_len / 2.
  const double attention_context = 2.0 * static_cast<double>(m.num_layers) * static_cast<double>(seq_len) *
                                   static_cast<double>(m.num_heads * m.head_dim);
  return forward_matmul_flops_per_token(m) + attention_context;
}

}  // namespace moeplan::model
