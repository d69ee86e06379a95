#include "proto_convert.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <moeplan/model/cuda_graphs.hpp>
#include <moeplan/model/pipeline_layout.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/model/size_bounds.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/model/family_rules.hpp>
#include <moeplan/model/validate.hpp>


namespace moeplan::io {
namespace {

// A line's or a shape model's provenance; required (the enum's 0 is "unset").
model::Provenance provenance_of(pb::Provenance p) {
  switch (p) {
    case pb::PAPER:
      return model::Provenance::Paper;
    case pb::DATASHEET:
      return model::Provenance::Datasheet;
    case pb::MEASURED:
      return model::Provenance::Measured;
    default:
      throw_input_error("provenance", "required field is missing (MEASURED, PAPER or DATASHEET)");
  }
}

pb::Provenance to_proto(model::Provenance p) {
  return p == model::Provenance::Measured ? pb::MEASURED : p == model::Provenance::Paper ? pb::PAPER : pb::DATASHEET;
}

template <typename T>
T required(bool has, T value, const char* field) {
  if (!has) throw_input_error(field, "required field is missing");
  return value;
}

// Size bounds (model/size_bounds.hpp), here by their short names.
using model::kMaxBatch;
using model::kMaxDegree;
using model::kMaxExperts;
using model::kMaxGluClamp;
using model::kMaxGpusPerNode;
using model::kMaxHidden;
using model::kMaxLayers;
using model::kMaxNodes;
using model::kMaxNvlinkDomainGpus;
using model::kMaxParallel;
using model::kMaxSeq;
using model::kMaxVocab;
using model::kMaxWidth;
constexpr double kMaxSlowRanksFactor = 100.0;  // see its use
constexpr double kMaxJitterCv = 2.0;           // see its use
// Each seed is one more simulation of the whole graph: 1,000 runs of the
// largest bundled graph take minutes, and a p95 needs only 20 to mean something.
constexpr std::int64_t kMaxJitterSeeds = 1000;
constexpr int kMaxRecomputeModules = 7;                 // Megatron-Core's choices (model/recompute.hpp)
constexpr std::int64_t kMaxRecomputeLayers = kMaxLayers;  // a layer count is at most the model's

// Negative sizes are refused by validation; very negative ones must not reach a product before it.
std::int64_t at_most(std::int64_t value, std::int64_t max, const char* field) {
  if (value > max) throw_input_error(field, fmt::format("{} is too large: at most {}", value, max));
  if (value < -max) throw_input_error(field, fmt::format("must not be negative, got {}", value));
  return value;
}

model::FfnType ffn_type(pb::ExpertType type, const char* field) {
  switch (type) {
    case pb::GELU_FFN:
      return model::FfnType::GeluFfn;
    case pb::SWIGLU:
      return model::FfnType::SwiGlu;
    default:
      throw_input_error(field, "must be GELU_FFN or SWIGLU");
  }
}

// Errors from a nested message get the nested field's name in front.
template <typename F>
auto nested(const char* prefix, F&& convert) {
  try {
    return convert();
  } catch (const Error& e) {
    throw e.prefixed(prefix);
  }
}

model::GpuSpec to_spec(const pb::Gpu& gpu) {
  model::GpuSpec g;
  g.name = required(gpu.has_name(), gpu.name(), "name");
  constexpr double kTera = 1e12;
  constexpr double kGibibyte = 1024.0 * 1024.0 * 1024.0;
  // Ranges are checked on the figures as given, before a conversion can overflow to inf.
  model::validate_peak_tflops(gpu.peak_tflops_fp32(), "peak_tflops_fp32");
  model::validate_peak_tflops(gpu.peak_tflops_fp16(), "peak_tflops_fp16");
  model::validate_peak_tflops(gpu.peak_tflops_bf16(), "peak_tflops_bf16");
  g.peak_flops_per_s_fp32 = gpu.peak_tflops_fp32() * kTera;
  g.peak_flops_per_s_fp16 = gpu.peak_tflops_fp16() * kTera;
  g.peak_flops_per_s_bf16 = gpu.peak_tflops_bf16() * kTera;
  const double memory_gib = required(gpu.has_memory_gib(), gpu.memory_gib(), "memory_gib");
  model::validate_memory_gib(memory_gib, "memory_gib");
  g.memory_bytes = memory_gib * kGibibyte;
  if (gpu.has_peak_tflops_fp8()) {
    if (gpu.peak_tflops_fp8() < 0) throw_input_error("peak_tflops_fp8", "must not be negative");
    model::validate_peak_tflops(gpu.peak_tflops_fp8(), "peak_tflops_fp8");
    g.peak_flops_per_s_fp8 = gpu.peak_tflops_fp8() * kTera;
  }
  if (gpu.mx_formats() && g.peak_flops_per_s_fp8 <= 0)
    throw_input_error("mx_formats", "MX formats run on FP8 tensor cores: the GPU needs a peak_tflops_fp8");
  g.mx_formats = gpu.mx_formats();
  if (gpu.has_sm_count()) g.sm_count = gpu.sm_count();
  if (gpu.has_memory_gbytes_per_s()) {
    model::validate_gemm_shape_rates(1.0, gpu.memory_gbytes_per_s(), "");
    g.memory_bytes_per_s = gpu.memory_gbytes_per_s() * 1e9;
  }
  if (gpu.has_gemm_tile_m()) g.gemm_tile_m = gpu.gemm_tile_m();
  if (gpu.has_gemm_tile_n()) g.gemm_tile_n = gpu.gemm_tile_n();
  if (gpu.has_gemm_efficiency()) {
    if (!(gpu.gemm_efficiency() > 0 && gpu.gemm_efficiency() <= 1))
      throw_input_error("gemm_efficiency",
                        fmt::format("a share of the tensor peak: must be in (0, 1], got {}", gpu.gemm_efficiency()));
    g.gemm_efficiency = gpu.gemm_efficiency();
  }
  for (int i = 0; i < gpu.fused_attention_size(); ++i) {
    const pb::FusedAttentionRate& r = gpu.fused_attention(i);
    const std::string at = fmt::format("fused_attention[{}].", i);
    model::FusedAttentionRate rate;
    if (r.pass() != pb::FORWARD && r.pass() != pb::BACKWARD)
      throw_input_error(at + "pass", "required: FORWARD or BACKWARD");
    rate.pass = r.pass() == pb::FORWARD ? model::AttentionPass::Forward : model::AttentionPass::Backward;
    if (r.has_head_dim()) rate.head_dim = r.head_dim();
    rate.efficiency = required(r.has_efficiency(), r.efficiency(), (at + "efficiency").c_str());
    rate.alpha_ms = required(r.has_alpha_us(), r.alpha_us(), (at + "alpha_us").c_str()) / 1e3;
    g.fused_attention.push_back(rate);
  }
  // Kernels' shares of the memory bandwidth (the fused loss, the gradient buffer passes).
  const auto memory_share = [&](bool has, double e, const char* field) -> std::optional<double> {
    if (!has) return std::nullopt;
    if (!(e > 0 && e <= 1))
      throw_input_error(field, fmt::format("a share of memory_gbytes_per_s: must be in (0, 1], got {}", e));
    if (!g.memory_bytes_per_s) throw_input_error(field, "a share of memory_gbytes_per_s, which the GPU does not give");
    return e;
  };
  g.fused_cross_entropy_efficiency = memory_share(gpu.has_fused_cross_entropy_efficiency(),
                                                  gpu.fused_cross_entropy_efficiency(), "fused_cross_entropy_efficiency");
  g.gradient_buffer_efficiency =
      memory_share(gpu.has_gradient_buffer_efficiency(), gpu.gradient_buffer_efficiency(), "gradient_buffer_efficiency");
  return g;
}

model::LinkSpec to_spec(const pb::Link& link) {
  model::LinkSpec l;
  l.name = required(link.has_name(), link.name(), "name");
  constexpr double kBitsPerByte = 8.0;
  const double gbit_s = required(link.has_bandwidth_gbit_s(), link.bandwidth_gbit_s(), "bandwidth_gbit_s");
  model::validate_link_gbit_s(gbit_s, "bandwidth_gbit_s");
  l.bandwidth_bytes_per_s = gbit_s * 1e9 / kBitsPerByte;
  l.ports_per_node = link.has_ports_per_node() ? link.ports_per_node() : 1;
  return l;
}

model::MlaSpec to_spec(const pb::MlaConfig& mla) {
  model::MlaSpec s;
  if (mla.has_q_lora_rank()) s.q_lora_rank = at_most(mla.q_lora_rank(), kMaxHidden, "q_lora_rank");
  s.kv_lora_rank = at_most(required(mla.has_kv_lora_rank(), mla.kv_lora_rank(), "kv_lora_rank"), kMaxHidden,
                           "kv_lora_rank");
  s.qk_nope_head_dim = at_most(required(mla.has_qk_nope_head_dim(), mla.qk_nope_head_dim(), "qk_nope_head_dim"),
                               kMaxWidth, "qk_nope_head_dim");
  s.qk_rope_head_dim = at_most(required(mla.has_qk_rope_head_dim(), mla.qk_rope_head_dim(), "qk_rope_head_dim"),
                               kMaxWidth, "qk_rope_head_dim");
  s.v_head_dim = at_most(required(mla.has_v_head_dim(), mla.v_head_dim(), "v_head_dim"), kMaxWidth, "v_head_dim");
  return s;
}

std::vector<bool> moe_layer_flags(const pb::Model& m, std::int64_t num_layers) {
  const pb::MoeConfig& moe = m.moe();
  std::vector<bool> flags(static_cast<std::size_t>(std::max<std::int64_t>(num_layers, 0)), false);
  if (!m.has_moe()) return flags;  // a dense model: no block has experts
  if (moe.moe_layers_size() > 0) {
    if (moe.has_moe_layer_interval() || moe.has_moe_layer_offset())
      throw_input_error("moe.moe_layers", "give either moe_layers or moe_layer_interval/offset, not both");
    if (moe.has_first_k_dense())
      throw_input_error("moe.first_k_dense", "give either moe_layers or first_k_dense, not both");
    for (int i = 0; i < moe.moe_layers_size(); ++i) {
      const std::int64_t layer = moe.moe_layers(i);
      if (layer < 0 || layer >= num_layers)
        throw_input_error(fmt::format("moe.moe_layers[{}]", i),
                          fmt::format("block {} is outside 0..{}", layer, num_layers - 1));
      flags[static_cast<std::size_t>(layer)] = true;
    }
    return flags;
  }
  const std::int64_t interval = moe.has_moe_layer_interval() ? moe.moe_layer_interval() : 1;
  const std::int64_t offset = moe.has_moe_layer_offset() ? moe.moe_layer_offset() : 0;
  if (interval <= 0) throw_input_error("moe.moe_layer_interval", fmt::format("must be positive, got {}", interval));
  if (offset < 0 || offset >= interval)
    throw_input_error("moe.moe_layer_offset", fmt::format("must be in 0..{}, got {}", interval - 1, offset));
  // A step past the last block ends the loop as the interval would, without overflowing.
  const std::int64_t step = std::min(interval, std::max<std::int64_t>(num_layers, 1));
  for (std::int64_t layer = offset; layer < num_layers; layer += step) flags[static_cast<std::size_t>(layer)] = true;
  // DeepSeek's rule (modeling_deepseek.py): block i is MoE when i >= first_k_dense_replace
  // and i % moe_layer_freq == 0; the interval/offset rule above is the second half.
  const std::int64_t first_dense = moe.first_k_dense();
  if (first_dense < 0 || first_dense > num_layers)
    throw_input_error("moe.first_k_dense", fmt::format("must be in 0..num_layers ({}), got {}", num_layers, first_dense));
  for (std::int64_t layer = 0; layer < first_dense; ++layer) flags[static_cast<std::size_t>(layer)] = false;
  return flags;
}

model::LinearCostSpec to_spec(const pb::LinearCost& c) {
  model::LinearCostSpec s;
  switch (required(c.has_op(), c.op(), "op")) {
    case pb::GEMM:
      s.op = model::OpClass::Gemm;
      break;
    case pb::ATTENTION:
      s.op = model::OpClass::Attention;
      break;
    case pb::A2A:
      s.op = model::OpClass::A2A;
      break;
    case pb::ALLGATHER:
      s.op = model::OpClass::AllGather;
      break;
    case pb::REDUCESCATTER:
      s.op = model::OpClass::ReduceScatter;
      break;
    case pb::ALLREDUCE:
      s.op = model::OpClass::AllReduce;
      break;
    case pb::P2P:
      s.op = model::OpClass::P2P;
      break;
    case pb::GEMM_FP8:
      s.op = model::OpClass::GemmFp8;
      break;
    case pb::ELEMENTWISE:
      s.op = model::OpClass::Elementwise;
      break;
    default:
      throw_input_error("op", "required field is missing");
  }
  switch (required(c.has_link(), c.link(), "link")) {
    case pb::INTRA:
      s.link = model::LinkClass::Intra;
      break;
    case pb::INTER:
      s.link = model::LinkClass::Inter;
      break;
    case pb::LOCAL:
      s.link = model::LinkClass::Local;
      break;
    default:
      throw_input_error("link", "required field is missing");
  }
  s.group = c.has_group() ? c.group() : 1;
  s.alpha_ms = required(c.has_alpha_ms(), c.alpha_ms(), "alpha_ms");
  s.beta_ms_per_unit = required(c.has_beta_ms(), c.beta_ms(), "beta_ms");
  s.r2 = c.has_r2() ? c.r2() : 1.0;
  s.points = c.points();
  if (c.has_ranks_per_node()) s.ranks_per_node = c.ranks_per_node();
  s.concurrent_groups = c.has_concurrent_groups() ? c.concurrent_groups() : 1;
  if (c.has_attention_pass()) {
    if (c.attention_pass() != pb::FORWARD && c.attention_pass() != pb::BACKWARD)
      throw_input_error("attention_pass", "must be FORWARD or BACKWARD (or absent: both passes)");
    s.attention_pass =
        c.attention_pass() == pb::FORWARD ? model::AttentionPass::Forward : model::AttentionPass::Backward;
  }
  if (c.has_head_dim()) s.head_dim = c.head_dim();
  if (c.has_kernel()) s.kernel = c.kernel();
  s.provenance = provenance_of(c.provenance());
  s.source = c.source();
  return s;
}

}  // namespace

model::ModelSpec to_spec(const pb::Model& m) {
  model::ModelSpec s;
  s.name = required(m.has_name(), m.name(), "name");
  s.num_layers = at_most(required(m.has_num_layers(), m.num_layers(), "num_layers"), kMaxLayers, "num_layers");
  s.d_model = at_most(required(m.has_d_model(), m.d_model(), "d_model"), kMaxWidth, "d_model");
  s.num_heads = at_most(required(m.has_num_heads(), m.num_heads(), "num_heads"), kMaxWidth, "num_heads");
  s.num_kv_heads = at_most(m.has_num_kv_heads() ? m.num_kv_heads() : s.num_heads, kMaxWidth, "num_kv_heads");
  if (m.has_mla()) {
    s.mla = nested("mla", [&] { return to_spec(m.mla()); });
    // Queries and keys of an MLA head are qk_nope_head_dim + qk_rope_head_dim wide.
    const std::int64_t qk = s.mla->qk_nope_head_dim + s.mla->qk_rope_head_dim;
    if (m.has_head_dim() && m.head_dim() != qk)
      throw_input_error("head_dim", fmt::format("with mla, a query/key head is mla.qk_nope_head_dim + "
                                                "mla.qk_rope_head_dim = {} wide; head_dim {} disagrees (leave it out)",
                                                qk, m.head_dim()));
    s.head_dim = qk;
  } else if (m.has_head_dim()) {
    s.head_dim = at_most(m.head_dim(), kMaxWidth, "head_dim");
  } else {
    if (s.num_heads > 0 && s.d_model % s.num_heads != 0)
      throw_input_error(
          "head_dim", fmt::format("not given and d_model {} is not divisible by num_heads {}", s.d_model, s.num_heads));
    s.head_dim = s.num_heads > 0 ? s.d_model / s.num_heads : 0;
  }
  s.vocab_size = at_most(required(m.has_vocab_size(), m.vocab_size(), "vocab_size"), kMaxVocab, "vocab_size");
  s.tie_embeddings = m.tie_embeddings();
  s.max_position_embeddings = at_most(m.max_position_embeddings(), kMaxSeq, "max_position_embeddings");
  s.norm_type = m.norm_type() == pb::RMSNORM ? model::NormType::RmsNorm : model::NormType::LayerNorm;
  s.linear_bias = m.linear_bias();
  s.qkv_bias = m.qkv_bias();
  s.dtype_bytes = required(m.has_dtype_bytes(), m.dtype_bytes(), "dtype_bytes");
  s.ffn_hidden = at_most(m.ffn_hidden(), kMaxHidden, "ffn_hidden");
  s.moe_layer = moe_layer_flags(m, s.num_layers);
  s.attention_sinks = m.attention_sinks();
  if (m.has_mtp_num_layers()) {
    // DeepSeek-V3 has one; Megatron-Core takes any count, each a whole block.
    s.mtp_num_layers = at_most(m.mtp_num_layers(), s.num_layers, "mtp_num_layers");
    if (s.mtp_num_layers < 0) throw_input_error("mtp_num_layers", "must not be negative");
  }
  if (m.has_sliding_window() || m.sliding_window_layers_size() > 0) {
    s.sliding_window = at_most(required(m.has_sliding_window(), m.sliding_window(), "sliding_window"), kMaxSeq,
                               "sliding_window");
    if (s.sliding_window < 1) throw_input_error("sliding_window", "must be at least 1 token");
    if (m.sliding_window_layers_size() == 0)
      throw_input_error("sliding_window_layers", "required with sliding_window: the blocks that use it");
    s.window_layer.assign(static_cast<std::size_t>(s.num_layers), false);
    for (const std::int64_t layer : m.sliding_window_layers()) {
      if (layer < 0 || layer >= s.num_layers)
        throw_input_error("sliding_window_layers",
                          fmt::format("block {} is not one of the model's 0..{}", layer, s.num_layers - 1));
      if (s.window_layer[static_cast<std::size_t>(layer)])
        throw_input_error("sliding_window_layers", fmt::format("block {} is listed twice", layer));
      s.window_layer[static_cast<std::size_t>(layer)] = true;
    }
  }
  if (m.has_attention_chunk_size() || m.attention_chunk_layers_size() > 0) {
    s.attention_chunk_size = at_most(required(m.has_attention_chunk_size(), m.attention_chunk_size(),
                                              "attention_chunk_size"),
                                     kMaxSeq, "attention_chunk_size");
    if (s.attention_chunk_size < 1) throw_input_error("attention_chunk_size", "must be at least 1 token");
    if (m.attention_chunk_layers_size() == 0)
      throw_input_error("attention_chunk_layers", "required with attention_chunk_size: the blocks that use it");
    s.chunk_layer.assign(static_cast<std::size_t>(s.num_layers), false);
    for (const std::int64_t layer : m.attention_chunk_layers()) {
      if (layer < 0 || layer >= s.num_layers)
        throw_input_error("attention_chunk_layers",
                          fmt::format("block {} is not one of the model's 0..{}", layer, s.num_layers - 1));
      if (s.chunk_layer[static_cast<std::size_t>(layer)])
        throw_input_error("attention_chunk_layers", fmt::format("block {} is listed twice", layer));
      s.chunk_layer[static_cast<std::size_t>(layer)] = true;
    }
  }
  if (!m.has_moe()) {
    // A dense model: every block's FFN is the dense one, so its type cannot
    // default to the experts' (there are none).
    s.ffn_type = ffn_type(required(m.has_ffn_type(), m.ffn_type(), "ffn_type"), "ffn_type");
    return s;
  }
  const pb::MoeConfig& moe = m.moe();
  s.moe = nested("moe", [&] {
    model::MoeSpec e;
    e.num_experts = at_most(required(moe.has_num_experts(), moe.num_experts(), "num_experts"), kMaxExperts, "num_experts");
    e.top_k = at_most(required(moe.has_top_k(), moe.top_k(), "top_k"), kMaxExperts, "top_k");
    if (moe.has_capacity_factor() && moe.dropless())
      throw_input_error("dropless", "give capacity_factor or dropless, not both");
    if (!moe.has_capacity_factor() && !moe.dropless())
      throw_input_error("capacity_factor", "required unless dropless: true");
    if (moe.has_capacity_factor()) e.capacity_factor = moe.capacity_factor();
    e.expert_type = ffn_type(required(moe.has_expert_type(), moe.expert_type(), "expert_type"), "expert_type");
    if (moe.has_expert_ffn_hidden() && moe.has_expert_ffn_hidden_scale())
      throw_input_error("expert_ffn_hidden_scale", "give expert_ffn_hidden or expert_ffn_hidden_scale, not both");
    if (moe.has_expert_ffn_hidden_scale()) {
      const double hidden = moe.expert_ffn_hidden_scale() * static_cast<double>(m.d_model());
      if (!(hidden >= 1) || hidden > static_cast<double>(kMaxHidden) || hidden != std::floor(hidden))
        throw_input_error("expert_ffn_hidden_scale", fmt::format("{} x d_model {} = {} is not a whole number >= 1",
                                                                 moe.expert_ffn_hidden_scale(), m.d_model(), hidden));
      e.expert_ffn_hidden = static_cast<std::int64_t>(hidden);
    } else {
      e.expert_ffn_hidden = at_most(required(moe.has_expert_ffn_hidden(), moe.expert_ffn_hidden(), "expert_ffn_hidden"),
                                    kMaxHidden, "expert_ffn_hidden");
    }
    e.num_shared_experts = at_most(moe.num_shared_experts(), kMaxExperts, "num_shared_experts");
    e.shared_expert_ffn_hidden = at_most(
        moe.has_shared_expert_ffn_hidden() ? moe.shared_expert_ffn_hidden() : e.expert_ffn_hidden, kMaxHidden,
        "shared_expert_ffn_hidden");
    e.first_k_dense = moe.first_k_dense();
    e.shared_expert_gate = moe.shared_expert_gate();
    if (moe.has_routed_scaling_factor()) e.routed_scaling_factor = moe.routed_scaling_factor();
    if (moe.has_num_expert_groups())
      e.num_expert_groups = at_most(moe.num_expert_groups(), kMaxExperts, "num_expert_groups");
    if (moe.has_topk_groups()) e.topk_groups = at_most(moe.topk_groups(), kMaxExperts, "topk_groups");
    e.scoring_func = moe.scoring_func();
    if (moe.has_glu_clamp()) {
      // GPT-OSS's limit is 7; a clamp is a bound on activations, positive and finite.
      if (!(moe.glu_clamp() >= 0 && moe.glu_clamp() <= kMaxGluClamp))
        throw_input_error("glu_clamp", fmt::format("{} is outside [0, {}]", moe.glu_clamp(), kMaxGluClamp));
      e.glu_clamp = moe.glu_clamp();
    }
    return e;
  });
  s.ffn_type = m.has_ffn_type() ? ffn_type(m.ffn_type(), "ffn_type") : s.moe.expert_type;
  return s;
}

model::ClusterSpec to_spec(const pb::Cluster& c) {
  model::ClusterSpec s;
  s.name = required(c.has_name(), c.name(), "name");
  s.num_nodes = at_most(required(c.has_num_nodes(), c.num_nodes(), "num_nodes"), kMaxNodes, "num_nodes");
  s.gpus_per_node =
      at_most(required(c.has_gpus_per_node(), c.gpus_per_node(), "gpus_per_node"), kMaxGpusPerNode, "gpus_per_node");
  if (!c.has_gpu()) throw_input_error("gpu", "required field is missing");
  s.gpu = nested("gpu", [&] { return to_spec(c.gpu()); });
  if (!c.has_intra_link()) throw_input_error("intra_link", "required field is missing");
  if (!c.has_inter_link()) throw_input_error("inter_link", "required field is missing");
  s.intra_link = nested("intra_link", [&] { return to_spec(c.intra_link()); });
  s.inter_link = nested("inter_link", [&] { return to_spec(c.inter_link()); });
  if (c.has_nvlink_domain_gpus())
    s.nvlink_domain_gpus = at_most(c.nvlink_domain_gpus(), kMaxNvlinkDomainGpus, "nvlink_domain_gpus");
  if (c.has_intra_collectives())
    s.intra_collectives = nested("intra_collectives", [&] {
      const pb::IntraCollectives& n = c.intra_collectives();
      model::IntraCollectivesSpec k;
      if (n.has_efficiency()) k.efficiency = n.efficiency();
      if (n.has_fixed_us()) k.fixed_ms = n.fixed_us() / 1e3;
      k.step_ms = n.step_us() / 1e3;
      return k;
    });
  return s;
}

model::GemmShapeModelSpec to_spec(const pb::GemmShapeModel& g) {
  model::GemmShapeModelSpec s;
  s.units = required(g.has_units(), g.units(), "units");
  s.tile_m = required(g.has_tile_m(), g.tile_m(), "tile_m");
  s.tile_n = required(g.has_tile_n(), g.tile_n(), "tile_n");
  const double peak_tflops = required(g.has_peak_tflops(), g.peak_tflops(), "peak_tflops");
  const double memory_gbytes_per_s =
      required(g.has_memory_gbytes_per_s(), g.memory_gbytes_per_s(), "memory_gbytes_per_s");
  // Ranges first, on the figures as given (a conversion could overflow to inf).
  model::validate_gemm_shape_rates(peak_tflops, memory_gbytes_per_s, "");
  s.peak_flops_per_s = peak_tflops * 1e12;
  s.memory_bytes_per_s = memory_gbytes_per_s * 1e9;
  if (g.has_peak_tflops_fp8()) {
    if (!(g.peak_tflops_fp8() > 0)) throw_input_error("peak_tflops_fp8", "must be a positive number");
    model::validate_peak_tflops(g.peak_tflops_fp8(), "peak_tflops_fp8");
    s.peak_flops_per_s_fp8 = g.peak_tflops_fp8() * 1e12;
  }
  s.efficiency = required(g.has_efficiency(), g.efficiency(), "efficiency");
  s.alpha_ms = required(g.has_alpha_ms(), g.alpha_ms(), "alpha_ms");
  if (g.has_product_alpha_ms()) s.product_alpha_ms = g.product_alpha_ms();
  s.provenance = provenance_of(g.provenance());
  s.source = g.source();
  if (g.has_r2()) s.r2 = g.r2();
  s.points = g.points();
  return s;
}

model::AttentionShapeModelSpec to_spec(const pb::AttentionShapeModel& a) {
  model::AttentionShapeModelSpec s;
  s.block_rows = required(a.has_block_rows(), a.block_rows(), "block_rows");
  s.alpha_ms = required(a.has_alpha_ms(), a.alpha_ms(), "alpha_ms");
  s.matmul_ms_per_gflop = required(a.has_matmul_ms_per_gflop(), a.matmul_ms_per_gflop(), "matmul_ms_per_gflop");
  s.score_ms_per_melement =
      required(a.has_score_ms_per_melement(), a.score_ms_per_melement(), "score_ms_per_melement");
  s.provenance = provenance_of(a.provenance());
  s.source = a.source();
  if (a.has_r2()) s.r2 = a.r2();
  s.points = a.points();
  return s;
}

model::HostIssueModelSpec to_spec(const pb::HostIssueModel& h) {
  model::HostIssueModelSpec s;
  // Each part is a time the host spends: finite and not negative (0: not priced).
  const auto part = [](bool has, double ms, const char* field) {
    const double v = required(has, ms, field);
    if (!(std::isfinite(v) && v >= 0)) throw_input_error(field, fmt::format("must be finite and >= 0 ms, got {}", v));
    return v;
  };
  s.attention_ms = part(h.has_attention_ms(), h.attention_ms(), "attention_ms");
  s.router_ms = part(h.has_router_ms(), h.router_ms(), "router_ms");
  s.moe_ms = part(h.has_moe_ms(), h.moe_ms(), "moe_ms");
  s.local_expert_ms = part(h.has_local_expert_ms(), h.local_expert_ms(), "local_expert_ms");
  s.source = h.source();
  return s;
}

model::CostProfileSpec to_spec(const pb::CostProfile& p) {
  model::CostProfileSpec s;
  s.name = required(p.has_name(), p.name(), "name");
  s.cluster = required(p.has_cluster(), p.cluster(), "cluster");
  s.overlap_compute_slowdown = p.has_overlap_compute_slowdown() ? p.overlap_compute_slowdown() : 1.0;
  s.overlap_comm_slowdown = p.has_overlap_comm_slowdown() ? p.overlap_comm_slowdown() : 1.0;
  if (p.has_gemm_shape()) s.gemm_shape = nested("gemm_shape", [&] { return to_spec(p.gemm_shape()); });
  if (p.has_attention_shape())
    s.attention_shape = nested("attention_shape", [&] { return to_spec(p.attention_shape()); });
  if (p.has_host_issue()) s.host_issue = nested("host_issue", [&] { return to_spec(p.host_issue()); });
  for (int i = 0; i < p.costs_size(); ++i) {
    const std::string at = fmt::format("costs[{}]", i);
    s.costs.push_back(nested(at.c_str(), [&] { return to_spec(p.costs(i)); }));
  }
  return s;
}

model::ParallelSpec to_spec(const pb::Parallelism& p, std::int64_t world_size) {
  model::ParallelSpec s;
  s.tp = p.has_tp() ? p.tp() : 1;
  s.cp = p.has_cp() ? p.cp() : 1;
  s.pp = p.has_pp() ? p.pp() : 1;
  s.ep = p.has_ep() ? p.ep() : 1;
  s.etp = p.has_etp() ? p.etp() : s.tp;
  s.vpp = p.has_vpp() ? p.vpp() : 1;
  s.sequence_parallel = p.sequence_parallel();
  if (p.has_order()) s.order = p.order();
  if (p.has_pipeline_layout()) {
    model::PipelineLayout layout = model::read_pipeline_layout(p.pipeline_layout(), "pipeline_layout");
    s.stage_layers = std::move(layout.stage_layers);
    s.layout_mtp_blocks = layout.mtp_blocks;
  }
  if (p.has_cp_comm_type()) {
    const std::string& type = p.cp_comm_type();
    if (type != "p2p" && type != "a2a" && type != "allgather" && type != "a2a+p2p")
      throw_input_error("cp_comm_type", fmt::format("must be p2p, a2a, allgather or a2a+p2p, got {}",
                                                    quoted_for_error(type)));
    s.cp_comm_type = type;
  }
  // Megatron's hierarchical sizes: two levels here (a2a inside, the ring across).
  if (p.hierarchical_cp_sizes_size() > 0) {
    if (s.cp_comm_type != "a2a+p2p")
      throw_input_error("hierarchical_cp_sizes", "sizes apply to cp_comm_type a2a+p2p only");
    if (p.hierarchical_cp_sizes_size() != 2)
      throw_input_error("hierarchical_cp_sizes",
                        fmt::format("two sizes (the a2a level, then the ring), got {}", p.hierarchical_cp_sizes_size()));
    for (const std::int64_t size : p.hierarchical_cp_sizes()) {
      if (size < 1) throw_input_error("hierarchical_cp_sizes", fmt::format("must be positive, got {}", size));
      s.hierarchical_cp_sizes.push_back(at_most(size, kMaxParallel, "hierarchical_cp_sizes"));
    }
  } else if (s.cp_comm_type == "a2a+p2p") {
    throw_input_error("hierarchical_cp_sizes", "a2a+p2p needs its two sizes (the a2a level, then the ring)");
  }
  for (auto [value, field] : {std::pair{s.tp, "tp"}, {s.cp, "cp"}, {s.pp, "pp"}, {s.ep, "ep"}, {s.etp, "etp"},
                              {s.vpp, "vpp"}}) {
    at_most(value, kMaxParallel, field);
    if (value < 1) throw_input_error(field, fmt::format("must be positive, got {}", value));
  }
  if (p.has_dp()) at_most(p.dp(), kMaxParallel, "dp");
  if (p.has_edp()) at_most(p.edp(), kMaxParallel, "edp");
  // dp and edp default to whatever the world size leaves over (Megatron derives them).
  const std::int64_t attention_cells = s.tp * s.cp * s.pp;
  const std::int64_t expert_cells = s.etp * s.ep * s.pp;
  if (attention_cells <= 0 || expert_cells <= 0) throw_input_error("", "parallel sizes must be positive");
  if (p.has_dp()) {
    s.dp = p.dp();
  } else if (world_size % attention_cells != 0) {
    throw_input_error("", fmt::format("tp*cp*pp = {} does not divide the world size {}", attention_cells, world_size));
  } else {
    s.dp = world_size / attention_cells;
  }
  if (p.has_edp()) {
    s.edp = p.edp();
  } else if (world_size % expert_cells != 0) {
    throw_input_error("", fmt::format("etp*ep*pp = {} does not divide the world size {}", expert_cells, world_size));
  } else {
    s.edp = world_size / expert_cells;
  }
  return s;
}

model::ScenarioSpec to_spec(const pb::Scenario& sc) {
  model::ScenarioSpec s;
  s.name = required(sc.has_name(), sc.name(), "name");
  if (!sc.has_model()) throw_input_error("model_ref", "required: a model (model_ref or model { ... })");
  if (!sc.has_cluster()) throw_input_error("cluster_ref", "required: a cluster (cluster_ref or cluster { ... })");
  s.model = nested("model", [&] { return to_spec(sc.model()); });
  s.cluster = nested("cluster", [&] { return to_spec(sc.cluster()); });
  if (sc.has_profile()) s.profile = nested("profile", [&] { return to_spec(sc.profile()); });
  s.parallel = nested("parallelism", [&] { return to_spec(sc.parallelism(), s.cluster.world_size()); });
  if (!sc.has_workload()) throw_input_error("workload", "required field is missing");
  s.workload = nested("workload", [&] {
    const pb::Workload& w = sc.workload();
    model::WorkloadSpec out;
    out.seq_len = at_most(required(w.has_seq_len(), w.seq_len(), "seq_len"), kMaxSeq, "seq_len");
    out.micro_batch_size = at_most(w.has_micro_batch_size() ? w.micro_batch_size() : 1, kMaxBatch, "micro_batch_size");
    // Default: one micro-batch per DP rank.
    out.global_batch_size = at_most(w.has_global_batch_size() ? w.global_batch_size() : out.micro_batch_size * s.parallel.dp,
                                    kMaxBatch, "global_batch_size");
    if (w.has_routing()) {
      const std::optional<model::Routing> routing = model::routing_from_string(w.routing());
      if (!routing)
        throw_input_error("routing", fmt::format("must be balanced, zipf or histogram, got {}",
                                                 quoted_for_error(w.routing())));
      out.routing = *routing;
    }
    if (w.has_routing_zipf_s()) {
      // Finite and positive (1/k^s must fall with the popularity rank k); the
      // upper bound is model::kMaxRoutingZipfS's plausibility bound.
      if (!(w.routing_zipf_s() > 0) || !std::isfinite(w.routing_zipf_s()))
        throw_input_error("routing_zipf_s", fmt::format("must be a positive number, got {}", w.routing_zipf_s()));
      if (w.routing_zipf_s() > model::kMaxRoutingZipfS)
        throw_input_error("routing_zipf_s",
                          fmt::format("{} is implausible: at most {} (the hottest expert would take over 92% of the "
                                      "slots)",
                                      w.routing_zipf_s(), model::kMaxRoutingZipfS));
      out.routing_zipf_s = w.routing_zipf_s();
    }
    if (w.has_routing_histogram_ref()) out.routing_histogram_ref = w.routing_histogram_ref();
    if (w.has_precision()) {
      const std::optional<model::Precision> precision = model::precision_from_string(w.precision());
      if (!precision)
        throw_input_error("precision",
                          fmt::format("must be bf16, fp8_delayed, fp8_tensorwise, fp8_blockwise or mxfp8, got {}",
                                      quoted_for_error(w.precision())));
      out.precision = *precision;
    }
    if (w.has_routing_seed()) {
      if (w.routing_seed() < 0)
        throw_input_error("routing_seed", fmt::format("must not be negative, got {}", w.routing_seed()));
      out.routing_seed = w.routing_seed();
    }
    return out;
  });
  const pb::ScheduleOptions& o = sc.schedule();
  if (o.has_name()) s.schedule.name = o.name();
  if (o.has_family()) s.schedule.family = o.family();
  // A schedule of another family: say which, and when the family was only
  // defaulted, that schedule.family is what to set (issue 14, item 8b).
  const model::FamilyRules* family = model::find_family_rules(s.schedule.family);
  if (o.has_name() && family != nullptr && family->names_schedules()) {
    const std::vector<std::string>& own = family->schedules();
    const std::vector<std::string> owners = model::families_with_schedule(o.name());
    if (!owners.empty() && std::find(own.begin(), own.end(), o.name()) == own.end())
      throw_input_error(
          "schedule.name",
          o.has_family()
              ? fmt::format("{} is a {} schedule, not one of schedule.family {}'s ({})", quoted_for_error(o.name()),
                            model::join_names(owners), s.schedule.family, model::join_names(own))
              : fmt::format("{} is a {} schedule, but schedule.family is not set and defaults to {} ({}); set "
                            "schedule.family: \"{}\"",
                            quoted_for_error(o.name()), model::join_names(owners), s.schedule.family,
                            model::join_names(own), owners.front()));
  }
  if (o.has_degree()) s.schedule.degree = at_most(o.degree(), kMaxDegree, "schedule.degree");
  if (o.has_degree_forward()) s.schedule.degree_forward = at_most(o.degree_forward(), kMaxDegree, "schedule.degree_forward");
  if (o.has_degree_backward())
    s.schedule.degree_backward = at_most(o.degree_backward(), kMaxDegree, "schedule.degree_backward");
  s.schedule.slicing_tokens.assign(o.slicing().begin(), o.slicing().end());
  if (o.has_ar_chunk_bytes()) s.schedule.ar_chunk_bytes = o.ar_chunk_bytes();
  s.schedule.fsmoe_released_solver_rules = o.fsmoe_released_solver_rules();
  if (o.has_mode() && o.mode() != "symmetric" && o.mode() != "multi_rank")
    throw_input_error("schedule.mode",
                      fmt::format("must be symmetric or multi_rank, got {}", quoted_for_error(o.mode())));
  s.schedule.multi_rank = o.mode() == "multi_rank";
  if (o.has_slow_ranks_compute_factor()) {
    if (!(o.slow_ranks_compute_factor() >= 1.0))
      throw_input_error("schedule.slow_ranks_compute_factor", "must be at least 1");
    // Plausibility (issue 13): a rank 100x slower than its peers is a failed
    // node, not a straggler; 1e300 gave iteration times of 5e299 ms.
    if (o.slow_ranks_compute_factor() > kMaxSlowRanksFactor)
      throw_input_error("schedule.slow_ranks_compute_factor",
                        fmt::format("{} is implausible: at most {}", o.slow_ranks_compute_factor(), kMaxSlowRanksFactor));
    s.schedule.slow_ranks_compute_factor = o.slow_ranks_compute_factor();
  }
  if (o.has_recompute()) {
    if (o.recompute() != "none" && o.recompute() != "selective" && o.recompute() != "full")
      throw_input_error("schedule.recompute",
                        fmt::format("must be none, selective or full, got {}", quoted_for_error(o.recompute())));
    s.schedule.recompute.granularity = o.recompute();
  }
  // Megatron takes the modules with selective and the method and layers with
  // full only: given with the other granularity they would not act.
  if (o.recompute_modules_size() > kMaxRecomputeModules)
    throw_input_error("schedule.recompute_modules",
                      fmt::format("{} modules: Megatron-Core has {}", o.recompute_modules_size(), kMaxRecomputeModules));
  for (const std::string& module : o.recompute_modules()) s.schedule.recompute.modules.push_back(module);
  if (o.search_size() > 2)
    throw_input_error("schedule.search", fmt::format("{} entries: the knobs are precision and recompute", o.search_size()));
  for (const std::string& knob : o.search()) {
    if (knob != "precision" && knob != "recompute")
      throw_input_error("schedule.search",
                        fmt::format("{} is not a knob the planner searches (precision, recompute)", quoted_for_error(knob)));
    if (std::find(s.schedule.search.begin(), s.schedule.search.end(), knob) != s.schedule.search.end())
      throw_input_error("schedule.search", fmt::format("{} is listed twice", knob));
    s.schedule.search.push_back(knob);
  }
  if (o.has_recompute_method()) {
    if (s.schedule.recompute.granularity != "full")
      throw_input_error("schedule.recompute_method", "a method applies to schedule.recompute full only");
    s.schedule.recompute.method = o.recompute_method();
  }
  if (o.has_recompute_num_layers()) {
    if (s.schedule.recompute.granularity != "full")
      throw_input_error("schedule.recompute_num_layers", "a layer count applies to schedule.recompute full only");
    if (o.recompute_num_layers() > kMaxRecomputeLayers)
      throw_input_error("schedule.recompute_num_layers",
                        fmt::format("{} is more than the {} blocks a model may have", o.recompute_num_layers(),
                                    kMaxRecomputeLayers));
    s.schedule.recompute.num_layers = o.recompute_num_layers();
  }
  if (o.has_attention_backend()) {
    if (o.attention_backend() != "flash" && o.attention_backend() != "unfused")
      throw_input_error("schedule.attention_backend",
                        fmt::format("must be flash or unfused, got {}", quoted_for_error(o.attention_backend())));
    s.schedule.attention_backend = o.attention_backend();
  }
  s.schedule.overlap_grad_reduce = o.overlap_grad_reduce();
  s.schedule.overlap_param_gather = o.overlap_param_gather();
  s.schedule.a2a_overlap = o.a2a_overlap();
  s.schedule.grad_reduce_in_bf16 = o.grad_reduce_in_bf16();
  if (o.has_check_for_nan_in_grad()) s.schedule.check_for_nan_in_grad = o.check_for_nan_in_grad();
  s.schedule.average_in_collective = o.average_in_collective();
  if (o.has_data_parallel_sharding_strategy()) {
    // Megatron's other two strategies (no_shard: DDP; optim_grads: ZeRO-2) are not priced.
    const std::string& strategy = o.data_parallel_sharding_strategy();
    if (strategy != "optim" && strategy != "optim_grads_params")
      throw_input_error("schedule.data_parallel_sharding_strategy",
                        fmt::format("must be optim or optim_grads_params, got {}", quoted_for_error(strategy)));
    s.schedule.data_parallel_sharding_strategy = strategy;
  }
  if (o.has_moe_dispatcher()) {
    if (o.moe_dispatcher() != "alltoall" && o.moe_dispatcher() != "deepep" && o.moe_dispatcher() != "hybridep")
      throw_input_error("schedule.moe_dispatcher", fmt::format("must be alltoall, deepep or hybridep, got {}",
                                                               quoted_for_error(o.moe_dispatcher())));
    s.schedule.moe_dispatcher = o.moe_dispatcher();
  }
  if (o.has_cross_entropy_fusion()) {
    // Megatron-Core's third choice, its jit-fused "native" kernels, is not priced.
    if (o.cross_entropy_fusion() != "none" && o.cross_entropy_fusion() != "te")
      throw_input_error("schedule.cross_entropy_fusion",
                        fmt::format("must be none or te (Transformer Engine's fused kernels), got {}",
                                    quoted_for_error(o.cross_entropy_fusion())));
    s.schedule.cross_entropy_fusion = o.cross_entropy_fusion();
  }
  s.schedule.precision_aware_optimizer = o.precision_aware_optimizer();
  s.schedule.fused_grouped_mlp = o.fused_grouped_mlp();
  if (o.has_cuda_graphs()) s.schedule.cuda_graphs = model::parse_cuda_graphs(o.cuda_graphs());
  if (o.has_optimizer_moments_dtype()) {
    // Megatron also offers fp16 and fp8 moments; they are not priced.
    if (o.optimizer_moments_dtype() != "fp32" && o.optimizer_moments_dtype() != "bf16")
      throw_input_error("schedule.optimizer_moments_dtype",
                        fmt::format("must be fp32 or bf16, got {}", quoted_for_error(o.optimizer_moments_dtype())));
    s.schedule.optimizer_moments_dtype = o.optimizer_moments_dtype();
  }
  if (o.has_master_weights()) {
    // Megatron-FSDP also offers bf16 and fp16 main weights beside the model's; they are not priced.
    if (o.master_weights() != "fp32" && o.master_weights() != "none")
      throw_input_error("schedule.master_weights",
                        fmt::format("must be fp32 or none, got {}", quoted_for_error(o.master_weights())));
    s.schedule.master_weights = o.master_weights();
  }
  if (o.has_compute_jitter_cv()) {
    // Plausibility: a cv of 1 already gives a task one time in six more than
    // twice its mean (lognormal, sigma^2 = ln 2); kernel timings vary by a few
    // percent (docs/cost-model.md, "Noise"). 2 bounds it generously.
    if (!(o.compute_jitter_cv() >= 0 && o.compute_jitter_cv() <= kMaxJitterCv))
      throw_input_error("schedule.compute_jitter_cv",
                        fmt::format("{} must be in [0, {}]", o.compute_jitter_cv(), kMaxJitterCv));
    s.schedule.compute_jitter_cv = o.compute_jitter_cv();
  }
  if (o.has_jitter_seeds()) {
    if (o.jitter_seeds() < 1 || o.jitter_seeds() > kMaxJitterSeeds)
      throw_input_error("schedule.jitter_seeds", fmt::format("{} must be in 1..{}", o.jitter_seeds(), kMaxJitterSeeds));
    s.schedule.jitter_seeds = o.jitter_seeds();
  }
  if (o.has_jitter_seed()) {
    if (o.jitter_seed() < 0) throw_input_error("schedule.jitter_seed", fmt::format("{} must be >= 0", o.jitter_seed()));
    s.schedule.jitter_seed = static_cast<std::uint64_t>(o.jitter_seed());
  }
  if (o.has_slow_ranks_fraction()) {
    if (!(o.slow_ranks_fraction() > 0 && o.slow_ranks_fraction() <= 1))
      throw_input_error("schedule.slow_ranks_fraction", "must be in (0, 1]");
    s.schedule.slow_ranks_fraction = o.slow_ranks_fraction();
  }
  return s;
}

pb::CostProfile to_proto(const model::CostProfileSpec& s) {
  pb::CostProfile p;
  p.set_name(s.name);
  p.set_cluster(s.cluster);
  if (s.overlap_compute_slowdown != 1.0) p.set_overlap_compute_slowdown(s.overlap_compute_slowdown);
  if (s.overlap_comm_slowdown != 1.0) p.set_overlap_comm_slowdown(s.overlap_comm_slowdown);
  for (const model::LinearCostSpec& c : s.costs) {
    pb::LinearCost* out = p.add_costs();
    out->set_op(static_cast<pb::OpClass>(static_cast<int>(c.op) + 1));
    out->set_link(c.link == model::LinkClass::Local   ? pb::LOCAL
                  : c.link == model::LinkClass::Intra ? pb::INTRA
                                                      : pb::INTER);
    out->set_group(c.group);
    out->set_alpha_ms(c.alpha_ms);
    out->set_beta_ms(c.beta_ms_per_unit);
    out->set_r2(c.r2);
    out->set_points(c.points);
    out->set_provenance(to_proto(c.provenance));
    if (!c.source.empty()) out->set_source(c.source);
    if (c.ranks_per_node) out->set_ranks_per_node(*c.ranks_per_node);
    if (c.concurrent_groups != 1) out->set_concurrent_groups(c.concurrent_groups);
    if (c.attention_pass)
      out->set_attention_pass(*c.attention_pass == model::AttentionPass::Forward ? pb::FORWARD : pb::BACKWARD);
    if (c.head_dim) out->set_head_dim(*c.head_dim);
    if (c.kernel) out->set_kernel(*c.kernel);
  }
  if (s.gemm_shape) {
    const model::GemmShapeModelSpec& g = *s.gemm_shape;
    pb::GemmShapeModel* out = p.mutable_gemm_shape();
    out->set_units(g.units);
    out->set_tile_m(g.tile_m);
    out->set_tile_n(g.tile_n);
    out->set_peak_tflops(g.peak_flops_per_s / 1e12);
    out->set_memory_gbytes_per_s(g.memory_bytes_per_s / 1e9);
    if (g.peak_flops_per_s_fp8 > 0) out->set_peak_tflops_fp8(g.peak_flops_per_s_fp8 / 1e12);
    out->set_efficiency(g.efficiency);
    out->set_alpha_ms(g.alpha_ms);
    if (g.product_alpha_ms > 0) out->set_product_alpha_ms(g.product_alpha_ms);
    out->set_provenance(to_proto(g.provenance));
    if (!g.source.empty()) out->set_source(g.source);
    if (g.r2) out->set_r2(*g.r2);
    if (g.points > 0) out->set_points(g.points);
  }
  if (s.attention_shape) {
    const model::AttentionShapeModelSpec& a = *s.attention_shape;
    pb::AttentionShapeModel* out = p.mutable_attention_shape();
    out->set_block_rows(a.block_rows);
    out->set_alpha_ms(a.alpha_ms);
    out->set_matmul_ms_per_gflop(a.matmul_ms_per_gflop);
    out->set_score_ms_per_melement(a.score_ms_per_melement);
    out->set_provenance(to_proto(a.provenance));
    if (!a.source.empty()) out->set_source(a.source);
    if (a.r2) out->set_r2(*a.r2);
    if (a.points > 0) out->set_points(a.points);
  }
  if (s.host_issue) {
    const model::HostIssueModelSpec& h = *s.host_issue;
    pb::HostIssueModel* out = p.mutable_host_issue();
    out->set_attention_ms(h.attention_ms);
    out->set_router_ms(h.router_ms);
    out->set_moe_ms(h.moe_ms);
    out->set_local_expert_ms(h.local_expert_ms);
    if (!h.source.empty()) out->set_source(h.source);
  }
  return p;
}

pb::Plan to_proto(const model::PlanSpec& s, const std::string& version) {
  pb::Plan p;
  p.set_scenario(s.scenario);
  p.set_schedule(s.schedule);
  p.set_iteration_ms(s.iteration_ms);
  p.set_baseline_ms(s.baseline_ms);
  p.set_speedup(s.speedup);
  p.set_moeplan_version(version);
  pb::Knobs* k = p.mutable_knobs();
  if (s.knobs.degree) k->set_degree(*s.knobs.degree);
  if (s.knobs.degree_forward) k->set_degree_forward(*s.knobs.degree_forward);
  if (s.knobs.degree_backward) k->set_degree_backward(*s.knobs.degree_backward);
  for (std::int64_t t : s.knobs.slicing_tokens) k->add_slicing(t);
  if (s.knobs.ar_chunk_bytes) k->set_ar_chunk_bytes(*s.knobs.ar_chunk_bytes);
  for (std::int64_t b : s.knobs.grad_partition_bytes) k->add_grad_partition_bytes(b);
  if (s.knobs.parallelism) *k->mutable_parallelism() = to_proto(*s.knobs.parallelism);
  if (s.knobs.micro_batch_size) k->set_micro_batch_size(*s.knobs.micro_batch_size);
  if (s.knobs.precision) k->set_precision(model::to_string(*s.knobs.precision));
  if (s.knobs.recompute) k->set_recompute(model::recompute_text(*s.knobs.recompute));
  if (!s.scenario_ref.empty()) p.set_scenario_ref(s.scenario_ref);
  for (const std::string& o : s.scenario_overrides) p.add_scenario_overrides(o);
  if (!s.family.empty()) p.set_family(s.family);
  return p;
}

pb::Parallelism to_proto(const model::ParallelSpec& s) {
  pb::Parallelism p;
  p.set_tp(s.tp);
  p.set_cp(s.cp);
  p.set_dp(s.dp);
  p.set_pp(s.pp);
  p.set_ep(s.ep);
  p.set_etp(s.etp);
  p.set_edp(s.edp);
  p.set_vpp(s.vpp);
  p.set_sequence_parallel(s.sequence_parallel);
  p.set_order(s.order);
  if (!s.stage_layers.empty()) p.set_pipeline_layout(model::pipeline_layout_text(s.stage_layers, s.layout_mtp_blocks));
  if (s.cp_comm_type != "p2p") p.set_cp_comm_type(s.cp_comm_type);
  for (const std::int64_t size : s.hierarchical_cp_sizes) p.add_hierarchical_cp_sizes(size);
  return p;
}

}  // namespace moeplan::io
