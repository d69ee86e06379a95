#include <moeplan/model/validate.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <set>
#include <string_view>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/family_rules.hpp>
#include <moeplan/model/options.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/model/size_bounds.hpp>

namespace moeplan::model {
namespace {

void require(bool ok, const std::string& field, const std::string& reason) {
  if (!ok) throw_input_error(field, reason);
}

void require_positive(std::int64_t value, const std::string& field) {
  require(value > 0, field, fmt::format("must be positive, got {}", value));
}

void require_positive(double value, const std::string& field) {
  require(std::isfinite(value) && value > 0, field, fmt::format("must be positive, got {}", value));
}

// Product of sizes, saturating at the largest int64 instead of overflowing.
std::int64_t product(std::initializer_list<std::int64_t> factors) {
  std::int64_t out = 1;
  for (std::int64_t f : factors)
    if (__builtin_mul_overflow(out, f, &out)) return std::numeric_limits<std::int64_t>::max();
  return out;
}

// A graph with more micro-batches per rank than this is not worth building.
constexpr std::int64_t kMaxMicroBatchesPerRank = 65536;

// Plausibility bounds (issue 13): hardware and cost figures far outside physical
// reality are refused with their field named, rather than carried into results
// (a GPU of 1e-300 TFLOP/s gave an MFU of 4.7e302). Each bound is generous, 40x
// or more beyond the bundled files (scenarios/clusters/, calibration/profiles/),
// so that it only catches typos, wrong units and garbage.

// Peak FLOP/s of one GPU in any precision. The fastest bundled figure is the
// H100 SXM5's 989.5 TFLOP/s dense BF16 (NVIDIA datasheet, dgx-h100.textproto);
// 1e5 TFLOP/s is 100x that, beyond any part announced by 2026. The slowest is
// 13.4 TFLOP/s FP32 (flowmoe-cluster2); 0.01 TFLOP/s is 1340x below it.
constexpr double kMinPeakTflops = 0.01;
constexpr double kMaxPeakTflops = 1e5;
// GPU memory: bundled GPUs have 11 GiB (GTX 1080 Ti) to 80 GiB (H100); 1/4 GiB
// is 44x below the smallest, 16384 GiB 200x above the largest.
constexpr double kMinMemoryGib = 0.25;
constexpr double kMaxMemoryGib = 16384;
// Per-direction bandwidth of one link port: bundled links run 10 Gbit/s
// (Ethernet, flowmoe-cluster2) to 3600 Gbit/s (NVLink 4, 450 GB/s); 0.1 Gbit/s
// is 100x below, 1e6 Gbit/s 278x above.
constexpr double kMinLinkGbitS = 0.1;
constexpr double kMaxLinkGbitS = 1e6;
// Ports of one link class per node: DGX H100 has 8 ConnectX-7 NICs, the most
// of any bundled cluster; 1024 is 128x that (and as many as kMaxGpusPerNode in
// src/io/proto_convert.cpp).
constexpr std::int64_t kMaxPortsPerNode = 1024;
// A cost line's startup: the largest bundled alpha is 0.511 ms; a kernel or
// collective that takes a second before moving any data is 2000x that.
constexpr double kMaxAlphaMs = 1000.0;
// A compute line's slope, ms per FLOP, is the inverse of its throughput: the
// peak bounds above give 1e-14 (1e5 TFLOP/s) at the fast end; at the slow end
// 1e-5 ms per FLOP is 100 MFLOP/s, the slowest peak the GEMM shape model
// allows (below). Bundled compute slopes are 1.7e-12 to 1.9e-10; the host calibration
// of a build under ASan + UBSan measured attention at 1.37e-6 (0.73 GFLOP/s,
// 2026-11-26), which the earlier bound of 1e-6 refused.
constexpr double kMinComputeBetaMs = 1e-14;
constexpr double kMaxComputeBetaMs = 1e-5;
// A communication line's slope, ms per byte: 1e-12 is 1 PB/s, 8x the fastest
// link allowed (algorithm bandwidth can exceed a link's by the bus-bandwidth
// factor, under 2x for ring collectives); 1 ms per byte is 1 kB/s, 12500x below
// the slowest link allowed. Bundled communication slopes are 2.4e-9 to 1.75e-6.
constexpr double kMinCommBetaMs = 1e-12;
constexpr double kMaxCommBetaMs = 1.0;
// Compute under an overlapping communication kernel: the slowdown is a factor
// of SM and memory contention; one of 100 would make every overlap schedule
// pointless by two orders of magnitude.
constexpr double kMaxOverlapSlowdown = 100.0;
// GEMM shape model (docs/cost-model.md, "GEMM shape model"). Units: the
// bundled GPUs have 56 (P100) to 132 (H100 SXM5) SMs, the host model 1 core;
// 4096 is 31x the largest. Tiles: CUTLASS/cuBLAS tensor-core tiles are at most
// 256 per side, Eigen's register blocks under 32; 4096 is 16x the largest.
// Peak: as kMinPeakTflops's bound above, down to 1e-4 TFLOP/s (100 MFLOP/s)
// for one host core: a 3 GHz core without SIMD FMA does 6 GFLOP/s, and the
// host calibration of a build under ASan + UBSan fitted 1.04 GFLOP/s alone and
// 0.69-0.74 GFLOP/s beside another test's replays on the 2 CI cores
// (2026-11-26), which the earlier bound of 0.001 refused. Memory bandwidth: 0.1
// GB/s is below any DRAM channel, 1e5 GB/s 12x the B200's 8 TB/s HBM3e.
constexpr std::int64_t kMaxShapeUnits = 4096;
constexpr std::int64_t kMaxTile = 4096;
constexpr double kMinShapePeakTflops = 1e-4;
constexpr double kMinMemoryGbytesPerS = 0.1;
constexpr double kMaxMemoryGbytesPerS = 1e5;

// Ranks of a measured collective and concurrent groups: the limit of the
// calibration CSV reader (src/io/calibration_input.cpp), 2^20.
constexpr std::int64_t kMaxGroup = 1048576;

void require_range(double value, double min, double max, const std::string& field, const char* unit) {
  require(std::isfinite(value) && value >= min && value <= max, field,
          fmt::format("{} {} is outside the plausible range [{}, {}] {}", value, unit, min, max, unit));
}

// Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, section 2.1):
// every size positive; K and V are up-projected per query head, so there is
// no grouping of KV heads to give.
void validate_mla(const ModelSpec& m) {
  const MlaSpec& a = *m.mla;
  if (a.q_lora_rank) require_positive(*a.q_lora_rank, "mla.q_lora_rank");
  require_positive(a.kv_lora_rank, "mla.kv_lora_rank");
  require_positive(a.qk_nope_head_dim, "mla.qk_nope_head_dim");
  require_positive(a.qk_rope_head_dim, "mla.qk_rope_head_dim");
  require_positive(a.v_head_dim, "mla.v_head_dim");
  require(!m.linear_bias, "linear_bias", "with mla: the model format gives MLA's projections no biases");
  require(!m.qkv_bias, "qkv_bias", "with mla: the model format gives MLA's projections no biases");
  require(m.num_kv_heads == m.num_heads, "num_kv_heads",
          fmt::format("with mla every query head has its own key and value (up-projected from the latent): "
                      "num_kv_heads {} must equal num_heads {}",
                      m.num_kv_heads, m.num_heads));
}

// DeepSeek-V3's group-limited routing (arXiv 2412.19437, section 2.1.2): the
// experts split into n_group equal groups, a token uses topk_group of them.
void validate_routing_metadata(const MoeSpec& e) {
  if (e.routed_scaling_factor)
    require_positive(*e.routed_scaling_factor, "moe.routed_scaling_factor");
  if (e.num_expert_groups) {
    require_positive(*e.num_expert_groups, "moe.num_expert_groups");
    require(e.num_experts % *e.num_expert_groups == 0, "moe.num_expert_groups",
            fmt::format("num_experts {} does not split into {} groups", e.num_experts, *e.num_expert_groups));
  }
  if (e.topk_groups) {
    require(e.num_expert_groups.has_value(), "moe.topk_groups", "needs moe.num_expert_groups (the groups it picks from)");
    require(*e.topk_groups >= 1 && *e.topk_groups <= *e.num_expert_groups, "moe.topk_groups",
            fmt::format("must be in 1..num_expert_groups ({}), got {}", *e.num_expert_groups, *e.topk_groups));
    // The groups a token may use must hold its top_k experts.
    const std::int64_t reachable = *e.topk_groups * (e.num_experts / *e.num_expert_groups);
    require(e.top_k <= reachable, "moe.topk_groups",
            fmt::format("{} groups of {} experts hold {} experts, fewer than top_k {}", *e.topk_groups,
                        e.num_experts / *e.num_expert_groups, reachable, e.top_k));
  }
  require(e.scoring_func.empty() || e.scoring_func == "softmax" || e.scoring_func == "sigmoid", "moe.scoring_func",
          fmt::format("must be softmax or sigmoid, got {}", quoted_for_error(e.scoring_func)));
}

// A sliding window (GPT-OSS) and chunks (Llama 4) are two masks of one
// block's attention: a block has one or the other (or neither), never both.
void validate_local_attention(const ModelSpec& m) {
  const auto blocks = static_cast<std::size_t>(m.num_layers);
  require(m.window_layer.empty() || m.window_layer.size() == blocks, "sliding_window_layers",
          "one flag per block expected");
  require(m.chunk_layer.empty() || m.chunk_layer.size() == blocks, "attention_chunk_layers",
          "one flag per block expected");
  require(m.num_window_layers() == 0 || m.sliding_window > 0, "sliding_window", "must be at least 1 token");
  require(m.num_chunk_layers() == 0 || m.attention_chunk_size > 0, "attention_chunk_size",
          "must be at least 1 token");
  for (std::size_t i = 0; i < m.window_layer.size() && i < m.chunk_layer.size(); ++i)
    require(!(m.window_layer[i] && m.chunk_layer[i]), "attention_chunk_layers",
            fmt::format("block {} is also in sliding_window_layers: a block's attention has a window or chunks, "
                        "not both",
                        i));
}

}  // namespace

void validate(const ModelSpec& m) {
  require(!m.name.empty(), "name", "required field is missing");
  require_positive(m.num_layers, "num_layers");
  require_positive(m.d_model, "d_model");
  require_positive(m.num_heads, "num_heads");
  require_positive(m.num_kv_heads, "num_kv_heads");
  require_positive(m.head_dim, "head_dim");
  require_positive(m.vocab_size, "vocab_size");
  require(m.num_heads % m.num_kv_heads == 0, "num_kv_heads",
          fmt::format("num_heads {} is not a multiple of num_kv_heads {}", m.num_heads, m.num_kv_heads));
  require(m.dtype_bytes == 1 || m.dtype_bytes == 2 || m.dtype_bytes == 4, "dtype_bytes",
          fmt::format("must be 1, 2 or 4, got {}", m.dtype_bytes));
  require(static_cast<std::int64_t>(m.moe_layer.size()) == m.num_layers, "moe.moe_layers",
          "one flag per block expected");
  require(m.max_position_embeddings >= 0, "max_position_embeddings", "must not be negative");
  if (m.mla) validate_mla(m);
  validate_local_attention(m);
  if (m.is_dense()) {
    // No `moe`: every block is a dense FFN block (Llama, Mistral, Qwen2/3 dense).
    require(m.num_moe_layers() == 0, "moe.moe_layers", "a dense model (no moe.num_experts) has no MoE blocks");
    require_positive(m.ffn_hidden, "ffn_hidden");
    return;
  }
  require_positive(m.moe.num_experts, "moe.num_experts");
  require_positive(m.moe.top_k, "moe.top_k");
  require(m.moe.top_k <= m.moe.num_experts, "moe.top_k",
          fmt::format("top_k {} exceeds num_experts {}", m.moe.top_k, m.moe.num_experts));
  require_positive(m.moe.expert_ffn_hidden, "moe.expert_ffn_hidden");
  require(m.moe.num_shared_experts >= 0, "moe.num_shared_experts", "must not be negative");
  if (m.moe.num_shared_experts > 0) require_positive(m.moe.shared_expert_ffn_hidden, "moe.shared_expert_ffn_hidden");
  if (m.moe.capacity_factor) {
    require_positive(*m.moe.capacity_factor, "moe.capacity_factor");
    // Beyond num_experts / top_k every expert could take every token: more is meaningless.
    const double most = static_cast<double>(m.moe.num_experts) / static_cast<double>(m.moe.top_k);
    require(*m.moe.capacity_factor <= most, "moe.capacity_factor",
            fmt::format("{} exceeds num_experts / top_k = {}", *m.moe.capacity_factor, most));
  }
  require(m.num_moe_layers() > 0, "moe.moe_layers",
          "no block is an MoE layer (for a dense model leave moe out of the file)");
  if (m.num_moe_layers() < m.num_layers) require_positive(m.ffn_hidden, "ffn_hidden");
  require(m.moe.glu_clamp == 0 || m.moe.expert_type == FfnType::SwiGlu, "moe.glu_clamp",
          "clamps a GLU's two halves, and the experts are not SWIGLU");
  require(!m.moe.shared_expert_gate || m.moe.num_shared_experts > 0, "moe.shared_expert_gate",
          "gates the shared experts' output, and the model has none (moe.num_shared_experts = 0)");
  validate_routing_metadata(m.moe);
}

void validate_peak_tflops(double tflops, const std::string& field) {
  if (tflops == 0 || tflops < 0) return;
  require_range(tflops, kMinPeakTflops, kMaxPeakTflops, field, "TFLOP/s");
}

void validate_memory_gib(double gib, const std::string& field) {
  require_range(gib, kMinMemoryGib, kMaxMemoryGib, field, "GiB");
}

void validate_link_gbit_s(double gbit_s, const std::string& field) {
  require_range(gbit_s, kMinLinkGbitS, kMaxLinkGbitS, field, "Gbit/s");
}

namespace {

// The key of an attention line or rate, its text for messages.
std::string attention_key(std::optional<AttentionPass> pass, std::optional<std::int64_t> head_dim) {
  const std::string p = !pass ? "both passes" : *pass == AttentionPass::Forward ? "FORWARD" : "BACKWARD";
  return head_dim ? fmt::format("{}, head_dim {}", p, *head_dim) : p + ", any head_dim";
}

void validate_fused_attention(const std::vector<FusedAttentionRate>& rates, const std::string& at) {
  std::set<std::pair<AttentionPass, std::int64_t>> seen;
  for (std::size_t i = 0; i < rates.size(); ++i) {
    const FusedAttentionRate& r = rates[i];
    const std::string prefix = fmt::format("{}[{}].", at, i);
    require(std::isfinite(r.efficiency) && r.efficiency > 0 && r.efficiency <= 1, prefix + "efficiency",
            fmt::format("a share of the half-precision peak: must be in (0, 1], got {}", r.efficiency));
    require(std::isfinite(r.alpha_ms) && r.alpha_ms >= 0 && r.alpha_ms < kMaxAlphaMs, prefix + "alpha_us",
            fmt::format("must be a finite time in [0, {}) us, got {}", kMaxAlphaMs * 1e3, r.alpha_ms * 1e3));
    if (r.head_dim)
      require(*r.head_dim >= 1 && *r.head_dim <= kMaxWidth, prefix + "head_dim",
              fmt::format("must be in 1..{}, got {}", kMaxWidth, *r.head_dim));
    require(seen.insert({r.pass, r.head_dim.value_or(0)}).second, prefix + "pass",
            fmt::format("a second entry for {}", attention_key(r.pass, r.head_dim)));
  }
}

}  // namespace

void validate(const ClusterSpec& c) {
  require(!c.name.empty(), "name", "required field is missing");
  require_positive(c.num_nodes, "num_nodes");
  require_positive(c.gpus_per_node, "gpus_per_node");
  require(!c.gpu.name.empty(), "gpu.name", "required field is missing");
  require(c.gpu.peak_flops_per_s_fp32 >= 0 && c.gpu.peak_flops_per_s_fp16 >= 0 && c.gpu.peak_flops_per_s_bf16 >= 0 &&
              c.gpu.peak_flops_per_s_fp8 >= 0,
          "gpu", "peak FLOP/s must not be negative");
  require(c.gpu.peak_flops_per_s_fp16 > 0 || c.gpu.peak_flops_per_s_bf16 > 0, "gpu.peak_tflops_fp16",
          "a half-precision peak (fp16 or bf16) is required");
  // A peak of 0 means the GPU lacks that precision (no BF16 before Ampere).
  for (auto [flops, field] : {std::pair{c.gpu.peak_flops_per_s_fp32, "gpu.peak_tflops_fp32"},
                              {c.gpu.peak_flops_per_s_fp16, "gpu.peak_tflops_fp16"},
                              {c.gpu.peak_flops_per_s_bf16, "gpu.peak_tflops_bf16"},
                              {c.gpu.peak_flops_per_s_fp8, "gpu.peak_tflops_fp8"}})
    validate_peak_tflops(flops / 1e12, field);
  validate_memory_gib(c.gpu.memory_bytes / (1024.0 * 1024.0 * 1024.0), "gpu.memory_gib");
  if (c.gpu.sm_count)
    require(*c.gpu.sm_count >= 1 && *c.gpu.sm_count <= kMaxShapeUnits, "gpu.sm_count",
            fmt::format("must be in 1..{}, got {}", kMaxShapeUnits, *c.gpu.sm_count));
  if (c.gpu.memory_bytes_per_s) validate_gemm_shape_rates(1.0, *c.gpu.memory_bytes_per_s / 1e9, "gpu");
  for (auto [tile, field] : {std::pair{c.gpu.gemm_tile_m, "gpu.gemm_tile_m"}, {c.gpu.gemm_tile_n, "gpu.gemm_tile_n"}})
    if (tile)
      require(*tile >= 1 && *tile <= kMaxTile, field, fmt::format("must be in 1..{}, got {}", kMaxTile, *tile));
  validate_fused_attention(c.gpu.fused_attention, "gpu.fused_attention");
  for (auto [e, field] : {std::pair{c.gpu.fused_cross_entropy_efficiency, "gpu.fused_cross_entropy_efficiency"},
                          {c.gpu.gradient_buffer_efficiency, "gpu.gradient_buffer_efficiency"}}) {
    if (!e) continue;
    require(std::isfinite(*e) && *e > 0 && *e <= 1, field,
            fmt::format("a share of memory_gbytes_per_s: must be in (0, 1], got {}", *e));
    require(c.gpu.memory_bytes_per_s.has_value(), field, "a share of memory_gbytes_per_s, which the GPU does not give");
  }
  if (c.nvlink_domain_gpus != 0) {
    require_positive(c.nvlink_domain_gpus, "nvlink_domain_gpus");
    require(c.nvlink_domain_gpus % c.gpus_per_node == 0, "nvlink_domain_gpus",
            fmt::format("{} GPUs is not a whole number of {}-GPU nodes", c.nvlink_domain_gpus, c.gpus_per_node));
  }
  for (auto [link, part] : {std::pair{&c.intra_link, std::string("intra_link")}, {&c.inter_link, "inter_link"}}) {
    validate_link_gbit_s(link->bandwidth_bytes_per_s * 8.0 / 1e9, part + ".bandwidth_gbit_s");
    require_positive(link->ports_per_node, part + ".ports_per_node");
    require(link->ports_per_node <= kMaxPortsPerNode, part + ".ports_per_node",
            fmt::format("{} ports per node is more than the plausible {}", link->ports_per_node, kMaxPortsPerNode));
  }
  if (const auto& n = c.intra_collectives) {
    if (n->efficiency)
      require(std::isfinite(*n->efficiency) && *n->efficiency > 0 && *n->efficiency <= 1,
              "intra_collectives.efficiency",
              fmt::format("a share of the line rate: must be in (0, 1], got {}", *n->efficiency));
    for (auto [value, field] : {std::pair{n->fixed_ms.value_or(0.0), "intra_collectives.fixed_us"},
                                {n->step_ms, "intra_collectives.step_us"}})
      require(std::isfinite(value) && value >= 0 && value < kMaxAlphaMs, field,
              fmt::format("must be a finite time in [0, {}) us, got {}", kMaxAlphaMs * 1e3, value * 1e3));
    // The startup of the largest group the lines price stays a plausible startup.
    const double largest = n->fixed_ms.value_or(0.0) + n->step_ms * static_cast<double>(c.link_domain() - 1);
    require(largest < kMaxAlphaMs, "intra_collectives.step_us",
            fmt::format("a startup of {} ms over the {}-GPU domain is implausible: at most {} ms", largest,
                        c.link_domain(), kMaxAlphaMs));
  }
}

void validate_cost_line(const LinearCostSpec& c, const std::string& at) {
  const std::string prefix = at.empty() ? "" : at + ".";
  require(std::isfinite(c.alpha_ms) && c.alpha_ms >= 0, prefix + "alpha_ms", "must be a finite, non-negative time");
  require(c.alpha_ms < kMaxAlphaMs, prefix + "alpha_ms",
          fmt::format("a startup of {} ms is implausible: at most {} ms", c.alpha_ms, kMaxAlphaMs));
  require(std::isfinite(c.beta_ms_per_unit) && c.beta_ms_per_unit >= 0, prefix + "beta_ms",
          "must be a finite, non-negative slope");
  // A memory-bound kernel moves bytes inside one GPU: the compute lines' range
  // holds its rates too (1e-14 ms/byte is 100 TB/s, 1e-5 is 100 MB/s).
  const bool compute = is_compute_op(c.op);
  if (compute)
    require_range(c.beta_ms_per_unit, kMinComputeBetaMs, kMaxComputeBetaMs, prefix + "beta_ms",
                  c.op == OpClass::Elementwise ? "ms per byte" : "ms per FLOP");
  else
    require_range(c.beta_ms_per_unit, kMinCommBetaMs, kMaxCommBetaMs, prefix + "beta_ms", "ms per byte");
  require_positive(c.group, prefix + "group");
  require(c.group <= kMaxGroup, prefix + "group", fmt::format("{} ranks: at most {}", c.group, kMaxGroup));
  require_positive(c.concurrent_groups, prefix + "concurrent_groups");
  require(c.concurrent_groups <= kMaxGroup, prefix + "concurrent_groups",
          fmt::format("{} groups: at most {}", c.concurrent_groups, kMaxGroup));
  if (c.ranks_per_node) {
    require(*c.ranks_per_node >= 1 && *c.ranks_per_node <= c.group, prefix + "ranks_per_node",
            fmt::format("must be in 1..group ({}), got {}", c.group, *c.ranks_per_node));
    // An inter-node line was measured across nodes: some members sit elsewhere.
    require(c.link != LinkClass::Inter || *c.ranks_per_node < c.group, prefix + "ranks_per_node",
            "an INTER line needs members on more than one node (ranks_per_node < group)");
    require(c.link != LinkClass::Intra || *c.ranks_per_node == c.group, prefix + "ranks_per_node",
            "an INTRA line has every member on one node (ranks_per_node = group)");
  }
  require(compute == (c.link == LinkClass::Local), prefix + "link",
          compute ? "compute operations use link LOCAL" : "communication needs link INTRA or INTER");
  require(!c.attention_pass || c.op == OpClass::Attention, prefix + "attention_pass",
          fmt::format("only an ATTENTION line names a pass, not a {} line", to_string(c.op)));
  require(!c.head_dim || c.op == OpClass::Attention, prefix + "head_dim",
          fmt::format("only an ATTENTION line names a head dimension, not a {} line", to_string(c.op)));
  if (c.head_dim)
    require(*c.head_dim >= 1 && *c.head_dim <= kMaxWidth, prefix + "head_dim",
            fmt::format("must be in 1..{}, got {}", kMaxWidth, *c.head_dim));
  if (c.kernel) {
    require(c.op == OpClass::Elementwise, prefix + "kernel",
            fmt::format("only an ELEMENTWISE line names a kernel, not a {} line", to_string(c.op)));
    require(std::any_of(std::begin(kElementwiseKernels), std::end(kElementwiseKernels),
                        [&](const char* k) { return *c.kernel == k; }),
            prefix + "kernel",
            fmt::format("unknown kernel \"{}\": a line may name \"{}\"", *c.kernel,
                        fmt::join(kElementwiseKernels, "\" or \"")));
  }
}

void validate_gemm_shape_rates(double peak_tflops, double memory_gbytes_per_s, const std::string& at) {
  const std::string prefix = at.empty() ? "" : at + ".";
  require_range(peak_tflops, kMinShapePeakTflops, kMaxPeakTflops, prefix + "peak_tflops", "TFLOP/s");
  require_range(memory_gbytes_per_s, kMinMemoryGbytesPerS, kMaxMemoryGbytesPerS, prefix + "memory_gbytes_per_s",
                "GB/s");
}

void validate_gemm_shape(const GemmShapeModelSpec& g, const std::string& at) {
  require(g.units >= 1 && g.units <= kMaxShapeUnits, at + ".units",
          fmt::format("must be in 1..{}, got {}", kMaxShapeUnits, g.units));
  for (auto [tile, field] : {std::pair{g.tile_m, "tile_m"}, {g.tile_n, "tile_n"}})
    require(tile >= 1 && tile <= kMaxTile, at + "." + field, fmt::format("must be in 1..{}, got {}", kMaxTile, tile));
  validate_gemm_shape_rates(g.peak_flops_per_s / 1e12, g.memory_bytes_per_s / 1e9, at);
  require(g.peak_flops_per_s_fp8 >= 0, at + ".peak_tflops_fp8", "must not be negative");
  if (g.peak_flops_per_s_fp8 > 0) validate_peak_tflops(g.peak_flops_per_s_fp8 / 1e12, at + ".peak_tflops_fp8");
  require(std::isfinite(g.efficiency) && g.efficiency > 0 && g.efficiency <= 1, at + ".efficiency",
          fmt::format("must be in (0, 1], got {}", g.efficiency));
  require(std::isfinite(g.alpha_ms) && g.alpha_ms >= 0 && g.alpha_ms < kMaxAlphaMs, at + ".alpha_ms",
          fmt::format("must be a finite time in [0, {}) ms, got {}", kMaxAlphaMs, g.alpha_ms));
  require(std::isfinite(g.product_alpha_ms) && g.product_alpha_ms >= 0 && g.product_alpha_ms < kMaxAlphaMs,
          at + ".product_alpha_ms",
          fmt::format("must be a finite time in [0, {}) ms, got {}", kMaxAlphaMs, g.product_alpha_ms));
  if (g.r2) require(std::isfinite(*g.r2) && *g.r2 <= 1, at + ".r2", fmt::format("must be at most 1, got {}", *g.r2));
  require(g.points >= 0, at + ".points", fmt::format("must not be negative, got {}", g.points));
}

// An attention core slower than 1e6 ms per GFLOP (a 1 MFLOP/s device) or per
// million scores is no GPU's or CPU's; the bound keeps products finite.
constexpr double kMaxAttentionMsPerUnit = 1e6;
// Query rows per tile: FlashAttention's tiles are 64..256 rows, the host kernel's 64.
constexpr std::int64_t kMaxBlockRows = 4096;

void validate_attention_shape(const AttentionShapeModelSpec& a, const std::string& at) {
  require(a.block_rows >= 1 && a.block_rows <= kMaxBlockRows, at + ".block_rows",
          fmt::format("must be in 1..{}, got {}", kMaxBlockRows, a.block_rows));
  require(std::isfinite(a.alpha_ms) && a.alpha_ms >= 0 && a.alpha_ms < kMaxAlphaMs, at + ".alpha_ms",
          fmt::format("must be a finite time in [0, {}) ms, got {}", kMaxAlphaMs, a.alpha_ms));
  for (auto [v, field] : {std::pair{a.matmul_ms_per_gflop, "matmul_ms_per_gflop"},
                          {a.score_ms_per_melement, "score_ms_per_melement"}})
    require(std::isfinite(v) && v >= 0 && v <= kMaxAttentionMsPerUnit, at + "." + field,
            fmt::format("must be in [0, {}], got {}", kMaxAttentionMsPerUnit, v));
  require(a.matmul_ms_per_gflop > 0 || a.score_ms_per_melement > 0, at + ".matmul_ms_per_gflop",
          "matmul_ms_per_gflop and score_ms_per_melement are both 0: the core would cost the same at any size");
  if (a.r2) require(std::isfinite(*a.r2) && *a.r2 <= 1, at + ".r2", fmt::format("must be at most 1, got {}", *a.r2));
  require(a.points >= 0, at + ".points", fmt::format("must not be negative, got {}", a.points));
}

void validate(const CostProfileSpec& p) {
  require(!p.name.empty(), "name", "required field is missing");
  if (p.gemm_shape) validate_gemm_shape(*p.gemm_shape, "gemm_shape");
  if (p.attention_shape) validate_attention_shape(*p.attention_shape, "attention_shape");
  require(!p.cluster.empty(), "cluster", "required field is missing");
  require(std::isfinite(p.overlap_compute_slowdown) && p.overlap_compute_slowdown >= 1.0, "overlap_compute_slowdown",
          "must be at least 1.0");
  require(p.overlap_compute_slowdown <= kMaxOverlapSlowdown, "overlap_compute_slowdown",
          fmt::format("{} is implausible: at most {}", p.overlap_compute_slowdown, kMaxOverlapSlowdown));
  require(std::isfinite(p.overlap_comm_slowdown) && p.overlap_comm_slowdown >= 1.0, "overlap_comm_slowdown",
          "must be at least 1.0");
  require(p.overlap_comm_slowdown <= kMaxOverlapSlowdown, "overlap_comm_slowdown",
          fmt::format("{} is implausible: at most {}", p.overlap_comm_slowdown, kMaxOverlapSlowdown));
  // Attention lines are told apart by pass and head dim too (-1 and 0 stand for "any"), kernel lines by kernel.
  std::set<std::tuple<OpClass, LinkClass, std::int64_t, int, std::int64_t, std::string>> seen;
  for (std::size_t i = 0; i < p.costs.size(); ++i) {
    const LinearCostSpec& c = p.costs[i];
    const std::string at = fmt::format("costs[{}]", i);
    validate_cost_line(c, at);
    // An ELEMENTWISE kernel's line is told apart by its kernel's name.
    const int pass = c.attention_pass ? static_cast<int>(*c.attention_pass) : -1;
    require(seen.insert({c.op, c.link, c.group, pass, c.head_dim.value_or(0), c.kernel.value_or("")}).second, at,
            c.op == OpClass::Attention
                ? fmt::format("duplicate ATTENTION line for {}", attention_key(c.attention_pass, c.head_dim))
                : fmt::format("duplicate entry for op {} link {} group {}{}", to_string(c.op), to_string(c.link),
                              c.group, c.kernel ? fmt::format(" kernel {}", *c.kernel) : std::string()));
  }
}

void validate_tensor_parallel_heads(const ModelSpec& m, std::int64_t tp) {
  // Megatron-Core shards Q by query heads and K, V by query groups over the TP
  // group; with tp above the KV head count it refuses to start rather than
  // replicate KV heads, so a mapping that needs replication is not one it runs.
  require(tp > 0 && m.num_heads % tp == 0 && m.num_kv_heads % tp == 0, "parallelism.tp",
          fmt::format("num_heads {} and num_kv_heads {} must both be divisible by tp {} (Megatron-Core splits "
                      "query and KV heads over tp and does not replicate KV heads)",
                      m.num_heads, m.num_kv_heads, tp));
}

namespace {
// workload.routing (docs/cost-model.md, "Uneven expert load"): zipf needs its
// exponent; a histogram needs one non-negative count per expert, not all zero.
void validate_routing(const ScenarioSpec& s) {
  const WorkloadSpec& w = s.workload;
  if (s.model.is_dense()) {
    // No router to spread tokens: an uneven routing could not act.
    require(w.routing == Routing::Balanced && !w.routing_zipf_s && w.routing_histogram_ref.empty(),
            w.routing != Routing::Balanced ? "workload.routing"
            : w.routing_zipf_s             ? "workload.routing_zipf_s"
                                           : "workload.routing_histogram_ref",
            "cannot act on this dense model (no moe): there is no router whose load it could shape");
    return;
  }
  if (w.routing == Routing::Zipf)
    require(w.routing_zipf_s.has_value(), "workload.routing_zipf_s",
            "required when workload.routing is zipf: the Zipf exponent s (popularity ~ 1/rank^s), e.g. 1.2");
  if (w.routing != Routing::Histogram) return;
  require(!w.routing_histogram_ref.empty(), "workload.routing_histogram_ref",
          "required when workload.routing is histogram: a CSV file 'expert,tokens' with one line per expert");
  const std::string file = w.routing_histogram_file.empty() ? w.routing_histogram_ref : w.routing_histogram_file;
  const std::int64_t entries = static_cast<std::int64_t>(w.routing_histogram.size());
  require(entries == s.model.moe.num_experts, "workload.routing_histogram_ref",
          fmt::format("{} has {} experts; the model has {} (model.moe.num_experts)", file, entries,
                      s.model.moe.num_experts));
  double total = 0;
  for (std::size_t e = 0; e < w.routing_histogram.size(); ++e) {
    const double tokens = w.routing_histogram[e];
    require(std::isfinite(tokens) && tokens >= 0, "workload.routing_histogram_ref",
            fmt::format("{}: expert {} has {} tokens; counts are non-negative numbers", file, e, tokens));
    total += tokens;
  }
  require(total > 0, "workload.routing_histogram_ref",
          fmt::format("{}: every expert has 0 tokens, which routes nothing", file));
}
}  // namespace

// An FP8 recipe replaces a 2-byte model's BF16 GEMMs; it needs a GPU with FP8
// tensor cores (MX-scaling ones for mxfp8) and a profile that prices FP8
// GEMMs and the casts in front of them (docs/cost-model.md, "FP8").
void validate_precision(const ScenarioSpec& s) {
  const Precision precision = s.workload.precision;
  if (!is_fp8(precision)) return;
  const char* recipe = to_string(precision);
  const GpuSpec& gpu = s.cluster.gpu;
  require(s.model.dtype_bytes == 2, "workload.precision",
          fmt::format("{} replaces BF16 GEMMs, and the model has {}-byte elements", recipe, s.model.dtype_bytes));
  require(gpu.peak_flops_per_s_fp8 > 0, "workload.precision",
          fmt::format("{} needs FP8 tensor cores, and the cluster's GPU {} has none (no cluster.gpu.peak_tflops_fp8)",
                      recipe, quoted_for_error(gpu.name)));
  require(precision != Precision::Mxfp8 || gpu.mx_formats, "workload.precision",
          fmt::format("mxfp8 needs tensor cores that scale MX blocks (Blackwell), and the cluster's GPU {} has none "
                      "(cluster.gpu.mx_formats)",
                      quoted_for_error(gpu.name)));
  if (!s.profile) return;
  const auto has_line = [&](OpClass op) {
    return std::any_of(s.profile->costs.begin(), s.profile->costs.end(),
                       [&](const LinearCostSpec& c) { return c.op == op && c.link == LinkClass::Local; });
  };
  for (OpClass op : {OpClass::GemmFp8, OpClass::Elementwise})
    require(has_line(op), "workload.precision",
            fmt::format("{} needs the profile's {} line, and profile {} has none (datasheet-profile writes one from "
                        "the GPU's FP8 peak and memory bandwidth)",
                        recipe, to_string(op), quoted_for_error(s.profile->name)));
  require(!s.profile->gemm_shape || s.profile->gemm_shape->peak_flops_per_s_fp8 > 0, "workload.precision",
          fmt::format("{} needs an FP8 peak in the GEMM shape model of profile {} (gemm_shape.peak_tflops_fp8)", recipe,
                      quoted_for_error(s.profile->name)));
}

namespace {

// Recomputation (docs/cost-model.md, "Recomputation"): modules the model has,
// and a profile that prices the element-wise kernels that layernorm and
// moe_act rerun.
void validate_scenario_recompute(const ScenarioSpec& s) {
  validate_recompute(s.model, s.schedule.recompute);
  // A knob the planner searches is not also set: which one would the plan keep?
  const auto searched = [&](const char* knob) {
    return std::find(s.schedule.search.begin(), s.schedule.search.end(), knob) != s.schedule.search.end();
  };
  const auto set = [&](const char* field) { return std::find(s.options.begin(), s.options.end(), field) != s.options.end(); };
  for (const auto& [knob, field] : {std::pair{"precision", "workload.precision"},
                                    {"recompute", "schedule.recompute"},
                                    {"recompute", "schedule.recompute_modules"},
                                    {"recompute", "schedule.recompute_method"},
                                    {"recompute", "schedule.recompute_num_layers"}})
    require(!searched(knob) || !set(field), field,
            fmt::format("set, and schedule.search leaves {} to the planner: give one", knob));
  if (!s.profile) return;
  const bool has_elementwise =
      std::any_of(s.profile->costs.begin(), s.profile->costs.end(),
                  [](const LinearCostSpec& c) { return c.op == OpClass::Elementwise && c.link == LinkClass::Local; });
  for (const char* module : {"layernorm", "moe_act"})
    require(has_elementwise || !recomputes_module(s.schedule.recompute, module), "schedule.recompute_modules",
            fmt::format("recomputing {} reruns element-wise kernels, and profile {} has no elementwise line to "
                        "price them (datasheet-profile writes one from the GPU's memory bandwidth)",
                        module, quoted_for_error(s.profile->name)));
}
// Megatron-FSDP (docs/cost-model.md, "FSDP") hides each block's gathers
// behind that block's compute; the 1F1B A2A overlap hides the AlltoAll behind
// the same compute. Both at once is not modelled: the compute would count twice.
void validate_data_parallel_sharding(const ScenarioSpec& s) {
  require(!fully_sharded(s.schedule) || !s.schedule.a2a_overlap, "schedule.a2a_overlap",
          "with schedule.data_parallel_sharding_strategy optim_grads_params is not modelled: Megatron-FSDP's "
          "prefetch and the 1F1B A2A overlap would hide behind the same compute");
  // bf16 main gradients are a half-precision model's choice: a model of
  // 4-byte weights keeps fp32 gradients whatever the flag says.
  require(!s.schedule.grad_reduce_in_bf16 || s.model.dtype_bytes == 2, "schedule.grad_reduce_in_bf16",
          fmt::format("bf16 gradients need a 2-byte model (model.dtype_bytes is {})", s.model.dtype_bytes));
  // The precision-aware optimizer's remainders are the 16 bits a bf16 weight
  // lacks of its fp32 master; Megatron-Bridge turns it off under Megatron-FSDP
  // ("cannot work with FSDP together", scripts/performance overrides).
  require(!s.schedule.precision_aware_optimizer || s.model.dtype_bytes == 2, "schedule.precision_aware_optimizer",
          fmt::format("its master-weight remainders need a 2-byte model (model.dtype_bytes is {})",
                      s.model.dtype_bytes));
  require(!s.schedule.precision_aware_optimizer || !fully_sharded(s.schedule), "schedule.precision_aware_optimizer",
          "with schedule.data_parallel_sharding_strategy optim_grads_params is not what Megatron runs: Megatron-FSDP "
          "and the precision-aware optimizer do not work together");
  // Without master weights the optimizer updates the 16-bit weights in place:
  // Megatron-FSDP's main params "auto" (Megatron-LM docs/user-guide/features/megatron_fsdp.md,
  // "Mixed-Precision"); the distributed optimizer always keeps an fp32 master.
  const bool no_master = !keeps_master_weights(s.schedule);
  require(!no_master || fully_sharded(s.schedule), "schedule.master_weights",
          "none needs schedule.data_parallel_sharding_strategy optim_grads_params: Megatron-Core's distributed "
          "optimizer always keeps fp32 master weights, Megatron-FSDP can go without");
  require(!no_master || s.model.dtype_bytes == 2, "schedule.master_weights",
          fmt::format("none needs a 2-byte model (model.dtype_bytes is {}): 4-byte weights are their own master",
                      s.model.dtype_bytes));
  // bf16 moments: the precision-aware optimizer's --exp-avg-dtype, or an Adam
  // whose state follows 16-bit weights it updates in place.
  require(s.schedule.optimizer_moments_dtype == "fp32" || s.schedule.precision_aware_optimizer || no_master,
          "schedule.optimizer_moments_dtype",
          "bf16 moments need schedule.precision_aware_optimizer or schedule.master_weights none");
}
// Transformer Engine's fused grouped MLP (docs/cost-model.md, "Fused grouped
// MLP"): TE's ops fuser hands GroupedLinear -> gated activation ->
// GroupedLinear to cuDNN front-end's SM100 MXFP8 grouped GEMMs
// (transformer_engine/pytorch/ops/fused/grouped_mlp.py, TE v2.15 on); any
// other precision or activation runs the unfused kernels, which is the
// scenario without the flag.
void validate_fused_grouped_mlp(const ScenarioSpec& s) {
  // A dense model has nothing to fuse: the folding family's option rules refuse it.
  if (!s.schedule.fused_grouped_mlp || s.model.is_dense()) return;
  const char* f = "schedule.fused_grouped_mlp";
  require(s.workload.precision == Precision::Mxfp8, f,
          fmt::format("needs workload.precision mxfp8: the fused kernels are MXFP8 grouped GEMMs (got {})",
                      to_string(s.workload.precision)));
  require(s.model.moe.expert_type == FfnType::SwiGlu, f,
          "needs gated experts (swiglu): the kernels apply a GLU in the first GEMM's epilogue");
  require(!recomputes_module(s.schedule.recompute, "moe_act"), "schedule.recompute_modules",
          "moe_act reruns an activation kernel that schedule.fused_grouped_mlp does not run");
}
}  // namespace

void validate_context_parallel(const ModelSpec& m, const ParallelSpec& p) {
  if (p.cp <= 1 || p.cp_comm_type == "p2p" || p.cp_comm_type == "allgather") return;
  const bool hierarchical = p.cp_comm_type == "a2a+p2p";
  if (hierarchical)
    require(p.hierarchical_cp_sizes.size() == 2 && p.hierarchical_cp_sizes[0] * p.hierarchical_cp_sizes[1] == p.cp,
            "parallelism.hierarchical_cp_sizes",
            fmt::format("the a2a and ring sizes must multiply to cp {}", p.cp));
  const std::int64_t split = hierarchical ? p.hierarchical_cp_sizes.front() : p.cp;
  const std::int64_t kv_heads = m.mla ? m.num_heads : m.num_kv_heads;  // MLA's K and V are per head
  require((m.num_heads / p.tp) % split == 0 && (kv_heads / p.tp) % split == 0,
          hierarchical ? "parallelism.hierarchical_cp_sizes" : "parallelism.cp_comm_type",
          fmt::format("{} exchanges heads for the sequence: {} query and {} K/V heads per tp rank (tp {}) do not "
                      "split over {}",
                      p.cp_comm_type, m.num_heads / p.tp, kv_heads / p.tp, p.tp, split));
}

void validate(const ScenarioSpec& s) {
  const ParallelSpec& p = s.parallel;
  const ModelSpec& m = s.model;
  const std::int64_t world = s.cluster.world_size();
  for (auto [value, field] : {std::pair{p.tp, "tp"},
                              {p.cp, "cp"},
                              {p.dp, "dp"},
                              {p.pp, "pp"},
                              {p.ep, "ep"},
                              {p.etp, "etp"},
                              {p.edp, "edp"},
                              {p.vpp, "vpp"}})
    require_positive(value, std::string("parallelism.") + field);
  require(product({p.tp, p.cp, p.dp, p.pp}) == world, "parallelism",
          fmt::format("tp*cp*dp*pp = {}*{}*{}*{} = {} but the cluster has {} GPUs", p.tp, p.cp, p.dp, p.pp,
                      product({p.tp, p.cp, p.dp, p.pp}), world));
  require(product({p.etp, p.ep, p.edp, p.pp}) == world, "parallelism",
          fmt::format("etp*ep*edp*pp = {}*{}*{}*{} = {} but the cluster has {} GPUs", p.etp, p.ep, p.edp, p.pp,
                      product({p.etp, p.ep, p.edp, p.pp}), world));
  validate_tensor_parallel_heads(m, p.tp);
  validate_context_parallel(m, p);
  require(m.is_dense() || m.moe.num_experts % p.ep == 0, "parallelism.ep",
          fmt::format("num_experts {} is not divisible by ep {}", m.moe.num_experts, p.ep));
  if (p.stage_layers.empty()) {
    require(m.num_layers % (p.pp * p.vpp) == 0, "parallelism.pp",
            fmt::format("num_layers {} is not divisible by pp*vpp = {} (an uneven split is a "
                        "parallelism.pipeline_layout)",
                        m.num_layers, p.pp * p.vpp));
  } else {
    std::int64_t blocks = 0;
    for (std::int64_t n : p.stage_layers) blocks += n;
    require(static_cast<std::int64_t>(p.stage_layers.size()) == p.pp * p.vpp, "parallelism.pipeline_layout",
            fmt::format("{} stages, and pp*vpp = {}", p.stage_layers.size(), p.pp * p.vpp));
    require(blocks == m.num_layers, "parallelism.pipeline_layout",
            fmt::format("{} blocks, and the model has {} layers", blocks, m.num_layers));
    // Megatron: the layout's MTP blocks number mtp_num_layers; moeplan also
    // takes a layout without them (it places them on the last stage).
    require(p.layout_mtp_blocks == 0 || p.layout_mtp_blocks == m.mtp_num_layers, "parallelism.pipeline_layout",
            fmt::format("{} 'm' blocks, and model.mtp_num_layers is {}", p.layout_mtp_blocks, m.mtp_num_layers));
  }
  require(p.vpp == 1 || p.pp > 1, "parallelism.vpp", "virtual pipeline stages need pp > 1");
  const WorkloadSpec& w = s.workload;
  require_positive(w.seq_len, "workload.seq_len");
  require_positive(w.micro_batch_size, "workload.micro_batch_size");
  require_positive(w.global_batch_size, "workload.global_batch_size");
  // Megatron splits a sequence into 2*cp chunks for load-balanced causal CP.
  const std::int64_t seq_split = (p.cp > 1 ? 2 * p.cp : 1) * (p.sequence_parallel ? p.tp : 1);
  require(w.seq_len % seq_split == 0, "workload.seq_len",
          fmt::format("seq_len {} is not divisible by {} (context and sequence parallel split)", w.seq_len, seq_split));
  require(w.global_batch_size % (w.micro_batch_size * p.dp) == 0, "workload.global_batch_size",
          fmt::format("global_batch_size {} is not divisible by micro_batch_size*dp = {}", w.global_batch_size,
                      w.micro_batch_size * p.dp));
  family_rules(s.schedule.family);  // an unknown family is refused, naming the known ones
  require(
      w.micro_batches_per_rank(p.dp) <= kMaxMicroBatchesPerRank, "workload.global_batch_size",
      fmt::format("{} micro-batches per DP rank; at most {}", w.micro_batches_per_rank(p.dp), kMaxMicroBatchesPerRank));
  require(is_known_schedule(s.schedule.name), "schedule.name",
          fmt::format("unknown schedule {}", quoted_for_error(s.schedule.name)));
  for (auto [value, field] : {std::pair{s.schedule.degree, "degree"},
                              {s.schedule.degree_forward, "degree_forward"},
                              {s.schedule.degree_backward, "degree_backward"},
                              {s.schedule.ar_chunk_bytes, "ar_chunk_bytes"}})
    if (value) require_positive(*value, std::string("schedule.") + field);
  for (std::int64_t tokens : s.schedule.slicing_tokens) require_positive(tokens, "schedule.slicing");
  if (s.profile)
    require(
        s.profile->cluster == s.cluster.name, "profile",
        fmt::format("profile {} belongs to cluster {} but the scenario runs on {}", quoted_for_error(s.profile->name),
                    quoted_for_error(s.profile->cluster), quoted_for_error(s.cluster.name)));
  // A compute line faster than the GPU's peak for the model's datatype is a
  // profile for another datatype or GPU (e.g. a BF16 datasheet profile under a
  // 4-byte model): its times would give an MFU above 1. 5% over the peak is
  // allowed for fits of noisy measurements.
  if (s.profile) {
    const GpuSpec& gpu = s.cluster.gpu;
    const double half_peak = gpu.peak_flops_per_s_bf16 > 0 ? gpu.peak_flops_per_s_bf16 : gpu.peak_flops_per_s_fp16;
    const double peak = m.dtype_bytes == 4 ? gpu.peak_flops_per_s_fp32 : half_peak;
    for (std::size_t i = 0; i < s.profile->costs.size(); ++i) {
      const LinearCostSpec& c = s.profile->costs[i];
      // FP8 GEMMs against the FP8 peak (a GPU without one has no FP8 line to check).
      const bool fp8 = c.op == OpClass::GemmFp8;
      const double limit = fp8 ? gpu.peak_flops_per_s_fp8 : peak;
      if ((c.op != OpClass::Gemm && c.op != OpClass::Attention && !fp8) || c.beta_ms_per_unit <= 0 || limit <= 0)
        continue;
      const double flops_per_s = 1e3 / c.beta_ms_per_unit;
      require(flops_per_s <= 1.05 * limit, fmt::format("profile.costs[{}].beta_ms", i),
              fmt::format("prices {} at {:.4g} TFLOP/s, above the GPU's {:.4g} TFLOP/s peak for {} "
                          "(a profile for another datatype or GPU?)",
                          to_string(c.op), flops_per_s / 1e12, limit / 1e12,
                          fp8 ? std::string("FP8 operands") : fmt::format("{}-byte elements", m.dtype_bytes)));
    }
  }
  // Last: an option that cannot act is refused once the scenario is otherwise valid,
  check_options(s);
  // then what a precision needs (after the options: a family that prices no FP8 refuses it first),
  validate_precision(s);
  validate_scenario_recompute(s);
  validate_data_parallel_sharding(s);
  validate_fused_grouped_mlp(s);
  // then what a routing needs (after the options: on folding, routing options are refused first).
  validate_routing(s);
  // and so is what a family's schedules cannot build, however it was written
  // (a referenced model file included): never simulated as something else.
  family_rules(s.schedule.family).validate(s);
  if (s.model.is_dense()) {
    // No experts to place: the expert mapping is the attention one (Megatron
    // derives etp = tp, edp = dp * cp), and any other could not act.
    require(s.parallel.ep == 1, "parallelism.ep",
            fmt::format("cannot act on this dense model (no moe): ep = {}, and there are no experts to spread",
                        s.parallel.ep));
    require(s.parallel.etp == s.parallel.tp, "parallelism.etp",
            fmt::format("cannot act on this dense model (no moe): etp = {} differs from tp = {}, and there are no "
                        "expert layers",
                        s.parallel.etp, s.parallel.tp));
  }
}

}  // namespace moeplan::model
