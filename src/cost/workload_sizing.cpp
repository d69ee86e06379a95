#include <moeplan/cost/workload_sizing.hpp>

#include <algorithm>
#include <cmath>

#include <moeplan/model/model_stats.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {

// Capacity factor of the dispatch buffer; dropless routing sends the expected
// (balanced) load, i.e. factor 1.
double capacity(const model::ModelSpec& m) { return m.moe.capacity_factor.value_or(1.0); }

double gemms_per_expert(const model::ModelSpec& m) {
  return m.moe.expert_type == model::FfnType::GeluFfn ? 2.0 : 3.0;  // GELU FFN: up, down; SwiGLU: gate, up, down
}
}  // namespace

double causal_pairs(double l, double c) { return l * (c - l) + l * (l + 1.0) / 2.0; }

double windowed_pairs(double l, double c, double w) {
  // Query j (1-based position j in the sequence, j in c - l + 1 .. c) sees min(j, w) keys.
  const double first = c - l;
  const double top = std::min(c, w);
  double pairs = top > first ? (top * (top + 1.0) - first * (first + 1.0)) / 2.0 : 0.0;
  pairs += std::max(0.0, c - std::max(first, w)) * w;
  return pairs;
}

namespace {
// Pairs of the queries at 1-based positions 1..n under C-token chunks: q full
// chunks of C (C + 1) / 2 each and the triangle of the r tokens after them.
double chunked_prefix_pairs(double n, double chunk) {
  const double full = std::floor(n / chunk);
  const double rest = n - full * chunk;
  return full * chunk * (chunk + 1.0) / 2.0 + rest * (rest + 1.0) / 2.0;
}
}  // namespace

double chunked_pairs(double l, double c, double chunk) {
  return chunked_prefix_pairs(c, chunk) - chunked_prefix_pairs(c - l, chunk);
}

double attention_core_flops(const model::ModelSpec& m, double l, double c, double window, double chunk) {
  const double h = as_double(m.num_heads);
  const double pairs = window > 0  ? windowed_pairs(l, c, window)
                       : chunk > 0 ? chunked_pairs(l, c, chunk)
                                   : causal_pairs(l, c);
  if (!m.mla) {
    const double k = as_double(m.head_dim);
    return (4.0 * h * k + 3.0 * h) * pairs;
  }
  // MLA: QK^T over the query/key width (nope + rope), AV over the value width.
  const double qk = as_double(m.head_dim), v = as_double(m.value_head_dim());
  return (2.0 * h * qk + 2.0 * h * v + 3.0 * h) * pairs;
}

double attention_projection_flops(const model::ModelSpec& m, double tokens) {
  return 2.0 * as_double(model::attention_matmul_weights(m).total()) * tokens;
}

double attention_flops_per_rank(const model::ModelSpec& m, const model::ParallelSpec& p, double sequences, double l,
                                double c) {
  const double split = as_double(p.tp) * as_double(p.cp);
  double flops = sequences * attention_flops(m, l, c) / split;
  // Without sequence parallelism every tp rank runs MLA's whole-width
  // down-projections on all its tokens (Megatron-Core's duplicated TELinear);
  // with it, each runs them on its 1/tp of the sequence before the latent is
  // gathered (multi_latent_attention.py), which the division above prices.
  if (p.tp > 1 && !p.sequence_parallel) {
    const double replicated = 2.0 * as_double(model::attention_matmul_weights(m).replicated) * l;
    flops += sequences * replicated * (1.0 - 1.0 / as_double(p.tp)) / as_double(p.cp);
  }
  return flops;
}

double attention_flops(const model::ModelSpec& m, double l, double c) {
  return attention_core_flops(m, l, c) + attention_projection_flops(m, l);
}

double causal_attention_flops(const model::ModelSpec& m, double L) { return attention_flops(m, L, L); }

double tokens_per_rank(const model::ModelSpec&, const model::ParallelSpec& p, const model::WorkloadSpec& w) {
  const double split = as_double(p.cp) * (p.sequence_parallel ? as_double(p.tp) : 1.0);
  return as_double(w.micro_batch_size) * as_double(w.seq_len) / split;
}

MoeLayerSizes moe_layer_sizes(const model::ModelSpec& m, const model::ParallelSpec& p, const model::WorkloadSpec& w) {
  MoeLayerSizes s;
  s.tokens_per_rank = tokens_per_rank(m, p, w);
  const double d = as_double(m.d_model);
  const double bytes = as_double(m.dtype_bytes);
  // Each token goes to top_k experts; the buffer is padded to the capacity
  // factor (FSMoE section 2.1: T = k f B L / E per expert).
  const double routed_tokens = s.tokens_per_rank * as_double(m.moe.top_k) * capacity(m);
  s.dispatch_bytes = routed_tokens * d * bytes;
  s.combine_bytes = s.dispatch_bytes;
  if (p.etp > 1) {
    // ESP/ETP: the tokens a rank received are gathered over its etp group
    // (FSMoE Fig. 2; Megatron AllGather-V), and scattered back after.
    s.etp_allgather_bytes = s.dispatch_bytes * as_double(p.etp);
    s.etp_reducescatter_bytes = s.etp_allgather_bytes;
  }
  // Balanced routing: a rank receives as many token slots as it sends; after
  // the ETP gather it holds etp times that, each against 1/etp of the hidden size.
  s.expert_slots = routed_tokens;
  s.expert_forward_flops = routed_tokens * gemms_per_expert(m) * 2.0 * d * as_double(m.moe.expert_ffn_hidden);
  // Shared experts see every local token (Qwen2, DeepSeek); under TP+SP the
  // gather over tp and the 1/tp hidden split cancel, leaving local tokens x hidden.
  s.expert_forward_flops += s.tokens_per_rank * as_double(m.moe.num_shared_experts) * gemms_per_expert(m) * 2.0 * d *
                            as_double(m.moe.shared_expert_ffn_hidden);
  s.expert_backward_flops = 2.0 * s.expert_forward_flops;  // FSMoE section 4.4
  s.gating_forward_flops = 2.0 * s.tokens_per_rank * d * as_double(m.moe.num_experts);
  return s;
}

AttentionLayerSizes attention_layer_sizes(const model::ModelSpec& m, const model::ParallelSpec& p,
                                          const model::WorkloadSpec& w) {
  AttentionLayerSizes s;
  s.tokens_per_rank = tokens_per_rank(m, p, w);
  // Heads split over tp, sequence over cp (load-balanced causal chunks).
  s.forward_flops =
      attention_flops_per_rank(m, p, as_double(w.micro_batch_size), as_double(w.seq_len), as_double(w.seq_len));
  s.backward_flops = 2.0 * s.forward_flops;
  if (p.tp > 1) {
    // Megatron TP (Shoeybi et al. 2019; Korthikanti et al. 2023): the
    // activation of the micro-batch's local sequence, micro_batch x seq / cp x d.
    const double activation_bytes = as_double(w.micro_batch_size) * as_double(w.seq_len) / as_double(p.cp) *
                                    as_double(m.d_model) * as_double(m.dtype_bytes);
    if (p.sequence_parallel) {
      s.tp_allgather_bytes = activation_bytes;
      s.tp_reducescatter_bytes = activation_bytes;
    } else {
      s.tp_allreduce_bytes = activation_bytes;
    }
  }
  return s;
}

double dense_gradient_bytes_per_block(const model::ModelSpec& m, const model::ParallelSpec& p) {
  const double attention = model::attention_params_per_rank(m, p.tp);
  const double router = as_double(m.d_model) * as_double(m.moe.num_experts);
  return (attention + router) * as_double(m.dtype_bytes);
}

double expert_gradient_bytes_per_block(const model::ModelSpec& m, const model::ParallelSpec& p) {
  const double per_expert =
      as_double(model::ffn_params(m.d_model, m.moe.expert_ffn_hidden, m.moe.expert_type, m.linear_bias));
  const double experts_here = as_double(m.moe.num_experts) / as_double(p.ep);
  return experts_here * per_expert / as_double(p.etp) * as_double(m.dtype_bytes);
}

}  // namespace moeplan::cost
