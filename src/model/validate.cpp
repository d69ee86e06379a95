#include <moeplan/model/validate.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <set>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

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

// Schedule names of the CLI (docs/cli.md); the schedule builders own their meaning.
constexpr std::array<std::string_view, 12> kScheduleNames{
    "none",         "tutel",        "aaam",  "1a1m",       "1a1m-uniform", "tutel-improved",
    "pipemoe-lina", "fsmoe-no-iio", "fsmoe", "flowmoe-at", "flowmoe-ar",   "flowmoe"};

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
  require(static_cast<std::int64_t>(m.moe_layer.size()) == m.num_layers, "moe.moe_layers",
          "one flag per block expected");
  require(m.num_moe_layers() > 0, "moe.moe_layers", "no block is an MoE layer");
  if (m.num_moe_layers() < m.num_layers) require_positive(m.ffn_hidden, "ffn_hidden");
  require(m.max_position_embeddings >= 0, "max_position_embeddings", "must not be negative");
}

void validate(const ClusterSpec& c) {
  require(!c.name.empty(), "name", "required field is missing");
  require_positive(c.num_nodes, "num_nodes");
  require_positive(c.gpus_per_node, "gpus_per_node");
  require(!c.gpu.name.empty(), "gpu.name", "required field is missing");
  require(c.gpu.peak_flops_per_s_fp32 >= 0 && c.gpu.peak_flops_per_s_fp16 >= 0 && c.gpu.peak_flops_per_s_bf16 >= 0,
          "gpu", "peak FLOP/s must not be negative");
  require(c.gpu.peak_flops_per_s_fp16 > 0 || c.gpu.peak_flops_per_s_bf16 > 0, "gpu.peak_tflops_fp16",
          "a half-precision peak (fp16 or bf16) is required");
  require_positive(c.gpu.memory_bytes, "gpu.memory_gib");
  require_positive(c.intra_link.bandwidth_bytes_per_s, "intra_link.bandwidth_gbit_s");
  require_positive(c.inter_link.bandwidth_bytes_per_s, "inter_link.bandwidth_gbit_s");
  require_positive(c.intra_link.ports_per_node, "intra_link.ports_per_node");
  require_positive(c.inter_link.ports_per_node, "inter_link.ports_per_node");
}

void validate(const CostProfileSpec& p) {
  require(!p.name.empty(), "name", "required field is missing");
  require(!p.cluster.empty(), "cluster", "required field is missing");
  require(std::isfinite(p.overlap_compute_slowdown) && p.overlap_compute_slowdown >= 1.0, "overlap_compute_slowdown",
          "must be at least 1.0");
  std::set<std::tuple<OpClass, LinkClass, std::int64_t>> seen;
  for (std::size_t i = 0; i < p.costs.size(); ++i) {
    const LinearCostSpec& c = p.costs[i];
    const std::string at = fmt::format("costs[{}]", i);
    require(std::isfinite(c.alpha_ms) && c.alpha_ms >= 0, at + ".alpha_ms", "must be a finite, non-negative time");
    require(std::isfinite(c.beta_ms_per_unit) && c.beta_ms_per_unit >= 0, at + ".beta_ms",
            "must be a finite, non-negative slope");
    require_positive(c.group, at + ".group");
    require_positive(c.concurrent_groups, at + ".concurrent_groups");
    if (c.ranks_per_node) {
      require(*c.ranks_per_node >= 1 && *c.ranks_per_node <= c.group, at + ".ranks_per_node",
              fmt::format("must be in 1..group ({}), got {}", c.group, *c.ranks_per_node));
      // An inter-node line was measured across nodes: some members sit elsewhere.
      require(c.link != LinkClass::Inter || *c.ranks_per_node < c.group, at + ".ranks_per_node",
              "an INTER line needs members on more than one node (ranks_per_node < group)");
      require(c.link != LinkClass::Intra || *c.ranks_per_node == c.group, at + ".ranks_per_node",
              "an INTRA line has every member on one node (ranks_per_node = group)");
    }
    const bool compute = c.op == OpClass::Gemm || c.op == OpClass::Attention;
    require(compute == (c.link == LinkClass::Local), at + ".link",
            compute ? "compute operations use link LOCAL" : "communication needs link INTRA or INTER");
    require(seen.insert({c.op, c.link, c.group}).second, at,
            fmt::format("duplicate entry for op {} link {} group {}", to_string(c.op), to_string(c.link), c.group));
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

bool is_known_schedule(const std::string& name) {
  return std::find(kScheduleNames.begin(), kScheduleNames.end(), name) != kScheduleNames.end();
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
  require(m.moe.num_experts % p.ep == 0, "parallelism.ep",
          fmt::format("num_experts {} is not divisible by ep {}", m.moe.num_experts, p.ep));
  require(m.num_layers % (p.pp * p.vpp) == 0, "parallelism.pp",
          fmt::format("num_layers {} is not divisible by pp*vpp = {}", m.num_layers, p.pp * p.vpp));
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
  require(s.schedule.family == "foldmoe" || s.schedule.family == "fsmoe" || s.schedule.family == "flowmoe" ||
              s.schedule.family == "folding",
          "schedule.family", fmt::format("unknown family '{}' (foldmoe, fsmoe, flowmoe, folding)", s.schedule.family));
  require(
      w.micro_batches_per_rank(p.dp) <= kMaxMicroBatchesPerRank, "workload.global_batch_size",
      fmt::format("{} micro-batches per DP rank; at most {}", w.micro_batches_per_rank(p.dp), kMaxMicroBatchesPerRank));
  require(is_known_schedule(s.schedule.name), "schedule.name", fmt::format("unknown schedule '{}'", s.schedule.name));
  for (auto [value, field] : {std::pair{s.schedule.degree, "degree"},
                              {s.schedule.degree_forward, "degree_forward"},
                              {s.schedule.degree_backward, "degree_backward"},
                              {s.schedule.ar_chunk_bytes, "ar_chunk_bytes"}})
    if (value) require_positive(*value, std::string("schedule.") + field);
  if (s.profile)
    require(s.profile->cluster == s.cluster.name, "profile",
            fmt::format("profile '{}' belongs to cluster '{}' but the scenario runs on '{}'", s.profile->name,
                        s.profile->cluster, s.cluster.name));
}

}  // namespace moeplan::model
