#include <moeplan/plan/folding.hpp>
#include <moeplan/plan/plausibility.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/parallel.hpp>
#include <moeplan/cost/expert_pricing.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/model/model_stats.hpp>
#include <moeplan/model/validate.hpp>
#include <moeplan/parallel/rank_groups.hpp>
#include <moeplan/sched/pipeline.hpp>
#include <moeplan/sim/analysis.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::plan {
namespace {

double as_double(std::int64_t v) { return static_cast<double>(v); }
using model::OpClass;

// The shape of a kind of group of the mapping (the first group stands for all;
// all groups of the kind run at once).
cost::GroupShape group_of(const parallel::RankGroups& groups, const model::ClusterSpec& cluster) {
  return cost::group_shape(groups.front(), cluster);
}

double comm(const cost::CostModel& costs, OpClass op, const cost::GroupShape& g, double bytes) {
  return costs.communication(op, g, bytes).value;
}

// A point-to-point transfer between two members of a group (pipeline
// neighbours, context-parallel ring steps): every such pair of the node at once.
cost::GroupShape pair_of(const parallel::RankGroups& groups, const model::ClusterSpec& cluster) {
  const std::vector<std::int64_t>& g = groups.front();
  return cost::group_shape(g.size() > 1 ? std::vector<std::int64_t>{g[0], g[1]} : g, cluster);
}

}  // namespace

model::ParallelSpec FoldingConfig::parallel_spec() const {
  model::ParallelSpec p;
  p.tp = tp;
  p.cp = cp;
  p.pp = pp;
  p.vpp = vpp;
  p.ep = ep;
  p.etp = etp;
  p.dp = dp;
  p.edp = edp;
  p.sequence_parallel = true;
  return p;
}

FoldingConfig FoldingConfig::from(const model::ParallelSpec& p, std::int64_t micro_batch) {
  return FoldingConfig{p.tp, p.cp, p.pp, p.vpp, p.ep, p.etp, micro_batch, p.dp, p.edp};
}

HeldParams held_params_of_layers(const model::ModelSpec& m, const FoldingConfig& c) {
  const double d = as_double(m.d_model);
  const double layers_per_stage = as_double(m.num_layers) / as_double(c.pp);
  // Megatron-Core TP splits the attention and shared-expert weights (and the
  // Q, K, V biases) over tp; norms and the router stay whole on every TP rank
  // (their gradients are all-reduced over tp under sequence parallelism).
  const double attention = as_double(model::attention_params_per_layer(m)) / as_double(c.tp);
  const double norms = 2.0 * as_double(model::norm_params(m));
  const double router = d * as_double(m.moe.num_experts);
  const double shared =
      as_double(m.moe.num_shared_experts) *
      as_double(model::ffn_params(m.d_model, m.moe.shared_expert_ffn_hidden, m.moe.expert_type, m.linear_bias)) /
      as_double(c.tp);
  const double expert =
      as_double(model::ffn_params(m.d_model, m.moe.expert_ffn_hidden, m.moe.expert_type, m.linear_bias));
  HeldParams h;
  h.dense = layers_per_stage * (attention + norms + router + shared);
  h.expert = layers_per_stage * as_double(m.moe.num_experts) / as_double(c.ep) * expert / as_double(c.etp);
  return h;
}

HeldParams held_params(const model::ModelSpec& m, const FoldingConfig& c) {
  const double d = as_double(m.d_model);
  // The first stage holds the word embedding (vocabulary split over tp) and any
  // learned positions; the last the LM head (a copy of the word embedding when
  // tied) and the final norm. With pp = 1 one stage holds both; otherwise the
  // larger of the two stands for the pipeline.
  const double words = as_double(m.vocab_size) * d / as_double(c.tp);
  const double first = words + as_double(m.max_position_embeddings) * d;
  const double last = words + as_double(model::norm_params(m));
  const double ends =
      c.pp == 1 ? (m.tie_embeddings ? first : first + words) + as_double(model::norm_params(m)) : std::max(first, last);
  HeldParams h = held_params_of_layers(m, c);
  h.dense += ends;
  return h;
}

double params_per_gpu(const model::ModelSpec& m, const FoldingConfig& c) {
  const HeldParams h = held_params(m, c);
  return h.dense + h.expert;
}

double memory_per_gpu(const model::ScenarioSpec& s, const FoldingConfig& c) {
  const model::ModelSpec& m = s.model;
  const HeldParams held = held_params(m, c);
  const double b = as_double(m.dtype_bytes);
  const double d = as_double(m.d_model);
  const double seq = as_double(s.workload.seq_len);
  const double tokens_local = as_double(c.micro_batch) * seq / as_double(c.cp);
  const std::int64_t micro_batches = s.workload.global_batch_size / (c.micro_batch * c.dp);
  const double layers_per_stage = as_double(m.num_layers) / as_double(c.pp);
  // Memory: bf16 weights (2 B) and fp32 gradients (4 B) per parameter held; fp32
  // master weights and Adam moments (12 B) sharded by the distributed optimizer
  // over the groups that reduce them: dp x cp (dense) and edp (experts).
  double bytes = (held.dense + held.expert) * (b + 4.0) + held.dense * 12.0 / as_double(c.dp * c.cp) +
                 held.expert * 12.0 / as_double(c.edp);
  // Activations (Korthikanti et al. 2023, selective recompute, flash attention):
  // 34 s b h bytes per layer at 2-byte elements, / (tp x cp); the MoE part
  // scales with the tokens the experts see (top-k x capacity) and their width.
  // Shared experts are MLPs on every token, split over tp like attention.
  const double dense_part = 34.0 * tokens_local * d / as_double(c.tp) * (b / 2.0);
  const double mlp_share = 19.0 / 34.0;  // of the 34: the 4h MLP's share (Korthikanti Table 2)
  const double moe_scale = as_double(m.moe.top_k) * m.moe.capacity_factor.value_or(1.0) *
                           as_double(m.moe.expert_ffn_hidden) / (4.0 * d) * as_double(c.tp) / as_double(c.etp);
  const double shared_scale = as_double(m.moe.num_shared_experts * m.moe.shared_expert_ffn_hidden) / (4.0 * d);
  double per_layer = dense_part * ((1.0 - mlp_share) + mlp_share * (moe_scale + shared_scale));
  // Recomputation (Korthikanti et al. 2023): none adds the attention scores
  // 5 a s / h per 34 (no flash attention); full keeps each layer's input only
  // (2 s b h / tp) and recomputes one layer at a time.
  if (s.schedule.recompute == "none")
    per_layer *= 1.0 + 5.0 * as_double(m.num_heads) * seq / as_double(c.cp) / d / 34.0;
  const double full_layer = per_layer;
  if (s.schedule.recompute == "full") per_layer = 2.0 * tokens_local * d / as_double(c.tp) * (b / 2.0);
  // 1F1B keeps pp micro-batches in flight on the first stage; interleaving adds (pp - 1) / (pp vpp).
  const double in_flight = std::min(as_double(c.pp), as_double(micro_batches)) *
                           (c.vpp > 1 ? 1.0 + (as_double(c.pp) - 1.0) / (as_double(c.pp) * as_double(c.vpp)) : 1.0);
  bytes += per_layer * layers_per_stage * in_flight;
  if (s.schedule.recompute == "full") bytes += full_layer;  // the layer being recomputed
  return bytes;
}

bool fits_in_memory(const model::ScenarioSpec& s, double bytes, const MemoryModel& mem) {
  return bytes <= s.cluster.gpu.memory_bytes * (1.0 - mem.reserve_fraction);
}

FoldingResult price_mapping(const model::ScenarioSpec& s, const cost::CostModel& costs, const FoldingConfig& in,
                            const MemoryModel& mem, FoldingTrace* trace, const StageOverlap* overlap) {
  const model::ModelSpec& m = s.model;
  FoldingResult out;
  out.config = in;
  FoldingConfig& c = out.config;
  const std::int64_t world = s.cluster.world_size();
  const parallel::Mapping map =
      parallel::make_mapping({world, c.tp, c.cp, c.pp, c.ep, c.etp, c.vpp, s.parallel.order, m.moe.num_experts, true});
  c.dp = map.dp;
  c.edp = map.edp;
  if (m.num_layers % (c.pp * c.vpp) != 0) throw_input_error("parallelism.pp", "layers do not split over pp x vpp");
  model::validate_tensor_parallel_heads(m, c.tp);
  if (s.workload.seq_len % (2 * c.cp * c.tp) != 0) throw_input_error("workload.seq_len", "sequence does not split");
  if (s.workload.global_batch_size % (c.micro_batch * c.dp) != 0)
    throw_input_error("workload.global_batch_size", "batch does not split into micro-batches over dp");
  const std::int64_t micro_batches = s.workload.global_batch_size / (c.micro_batch * c.dp);
  if (c.vpp > 1 && micro_batches % c.pp != 0)
    throw_input_error("parallelism.vpp", "micro-batches not a multiple of pp");

  const model::ClusterSpec& cl = s.cluster;
  const cost::GroupShape tp_g = group_of(map.attention.at("tp"), cl), dp_cp_g = group_of(map.attention.at("dp-cp"), cl),
                         ep_g = group_of(map.expert.at("ep"), cl), etp_g = group_of(map.expert.at("etp"), cl),
                         edp_g = group_of(map.expert.at("edp"), cl), cp_pair = pair_of(map.attention.at("cp"), cl),
                         pp_pair = pair_of(map.attention.at("pp"), cl);
  const double b = as_double(s.model.dtype_bytes);
  const double d = as_double(m.d_model);
  const double seq = as_double(s.workload.seq_len);
  const double mbs = as_double(c.micro_batch);
  // Per micro-batch, per layer, per GPU (Megatron with TP + SP, CP, EP, ETP).
  model::ParallelSpec ps;
  ps.tp = c.tp;
  ps.cp = c.cp;
  ps.ep = c.ep;
  ps.etp = c.etp;
  ps.sequence_parallel = true;
  model::WorkloadSpec w = s.workload;
  w.micro_batch_size = c.micro_batch;
  const cost::MoeLayerSizes moe = cost::moe_layer_sizes(m, ps, w);
  // Attention, split over tp (heads) and cp (load-balanced causal chunks):
  // projections of the local tokens, 2 x (2 d h k + 2 d g k) FLOPs each (GQA:
  // g KV heads). Weights only: bias adds are element-wise GEMM epilogues, not
  // multiply-adds, and the MFU numerator counts weights only too. The core is
  // the project's one causal rule: every query-key pair of the sequence once.
  const double tokens_local = mbs * seq / as_double(c.cp);
  const double proj_flops = cost::attention_projection_flops(m, tokens_local) / as_double(c.tp);
  const double core_flops = mbs * cost::attention_core_flops(m, seq, seq) / (as_double(c.tp) * as_double(c.cp));
  const double att_fwd =
      costs.compute(OpClass::Gemm, proj_flops).value + costs.compute(OpClass::Attention, core_flops).value;
  const double act_bytes = tokens_local * d * b;  // one layer's activation on a tp group
  const double tp_fwd =
      comm(costs, OpClass::AllGather, tp_g, act_bytes) + comm(costs, OpClass::ReduceScatter, tp_g, act_bytes);
  // CP: cp - 1 ring steps of this rank's K and V block, overlapped with attention compute.
  const double kv_bytes = 2.0 * tokens_local * as_double(m.num_kv_heads * m.head_dim) / as_double(c.tp) * b;
  const double cp_fwd =
      c.cp > 1 ? as_double(c.cp - 1) * costs.communication(OpClass::P2P, cp_pair, kv_bytes).value : 0.0;
  const double cp_exposed = std::max(0.0, cp_fwd - costs.compute(OpClass::Attention, core_flops).value);
  const double router = costs.compute(OpClass::Gemm, moe.gating_forward_flops).value;
  // By shape when the profile has a GEMM shape model; else the gemm line on the FLOPs.
  const double experts_fwd = cost::expert_ffn_time(costs, m, ps, moe, false, 1.0).value;
  const double experts_bwd = cost::expert_ffn_time(costs, m, ps, moe, true, 1.0).value;
  const double a2a = 2 * comm(costs, OpClass::A2A, ep_g, moe.dispatch_bytes);
  const double etp_agrs = comm(costs, OpClass::AllGather, etp_g, moe.etp_allgather_bytes) +
                          comm(costs, OpClass::ReduceScatter, etp_g, moe.etp_reducescatter_bytes);
  const double layer_fwd = att_fwd + tp_fwd + cp_exposed + router + experts_fwd + a2a + etp_agrs;
  const double layer_bwd = 2 * att_fwd + tp_fwd + cp_exposed + 2 * router + experts_bwd + a2a + etp_agrs;
  const double layers_per_chunk = as_double(m.num_layers) / as_double(c.pp * c.vpp);
  const double layers_per_stage = as_double(m.num_layers) / as_double(c.pp);
  // LM head (first/last stage) is left to the chunk costs of every stage alike.
  const double p2p = c.pp > 1 ? comm(costs, OpClass::P2P, pp_pair, act_bytes / as_double(c.tp)) : 0.0;
  // Distributed optimizer (Megatron-Core DDP): after a stage's last backward,
  // the fp32 gradients are reduce-scattered and the updated bf16 parameters
  // all-gathered. Every parameter that is not a routed expert (attention,
  // norms, router, shared experts, embeddings) is reduced over the
  // data-parallel group with context parallelism (dp x cp: CP ranks hold the
  // same weights and see other tokens of the same samples); routed experts
  // over edp. Priced for the stage that holds the most (embedding or LM head).
  const HeldParams held = held_params(m, c);
  const double dp_ms = comm(costs, OpClass::ReduceScatter, dp_cp_g, held.dense * 4) +
                       comm(costs, OpClass::AllGather, dp_cp_g, held.dense * b) +
                       comm(costs, OpClass::ReduceScatter, edp_g, held.expert * 4) +
                       comm(costs, OpClass::AllGather, edp_g, held.expert * b);
  // The layers' share of the gradient reduce-scatter (the ends' embedding and
  // LM head gradients are left out): what an overlap schedule can hide under
  // the last backward pass (the joint search).
  const HeldParams layers_only = held_params_of_layers(m, c);
  out.stage.layer_gradient_rs_ms = comm(costs, OpClass::ReduceScatter, dp_cp_g, layers_only.dense * 4) +
                                   comm(costs, OpClass::ReduceScatter, edp_g, layers_only.expert * 4);
  const StageOverlap none;
  const StageOverlap& saved = overlap != nullptr ? *overlap : none;
  sched::PipelineSpec pipe;
  pipe.stages = c.pp;
  pipe.virtual_stages = c.vpp;
  pipe.micro_batches = micro_batches;
  pipe.chunk = {layers_per_chunk * layer_fwd - saved.chunk_forward_saved_ms,
                layers_per_chunk * layer_bwd - saved.chunk_backward_saved_ms, c.pp > 1 ? p2p : 0.0};
  MOEPLAN_CHECK(pipe.chunk.forward_ms >= 0 && pipe.chunk.backward_ms >= 0 && saved.optimizer_saved_ms <= dp_ms,
                "an overlap hides no more than a stage's work");
  // The sizes the chunk's tasks stand for (trace args): weight GEMMs, attention core and router FLOPs; the
  // P2P activation; the optimizer step's gradient and parameter bytes.
  const double layer_flops_fwd = proj_flops + core_flops + moe.gating_forward_flops + moe.expert_forward_flops;
  const double layer_flops_bwd = 2 * (proj_flops + core_flops + moe.gating_forward_flops) + moe.expert_backward_flops;
  pipe.chunk.forward_flops = layers_per_chunk * layer_flops_fwd;
  pipe.chunk.backward_flops = layers_per_chunk * layer_flops_bwd;
  pipe.chunk.p2p_bytes = c.pp > 1 ? act_bytes / as_double(c.tp) : 0.0;
  pipe.optimizer_ms = dp_ms - saved.optimizer_saved_ms;
  pipe.optimizer_bytes = (held.dense + held.expert) * (4 + b);
  pipe.limits = s.limits;
  sched::BuiltSchedule built = sched::build_pipeline(pipe);
  built.overlap_compute_slowdown = costs.overlap_compute_slowdown();
  built.overlap_comm_slowdown = costs.overlap_comm_slowdown();
  sim::Timeline tl = run_schedule(built);
  // Stage 0 runs the last backward, so the iteration ends with its optimizer step.
  out.iteration_ms = tl.makespan_ms;
  // Breakdown for the stage: per micro-batch costs times micro-batches and layers per stage.
  const double per_stage = as_double(micro_batches) * layers_per_stage;
  out.breakdown.attention_ms = per_stage * 3 * att_fwd;
  out.breakdown.moe_compute_ms = per_stage * (3 * router + experts_fwd + experts_bwd);
  out.breakdown.a2a_ms = per_stage * 2 * a2a;
  out.breakdown.agrs_ms = per_stage * 2 * (tp_fwd + etp_agrs + cp_exposed);
  out.breakdown.dp_ms = dp_ms;
  const sim::Summary summary = sim::summarize(built.graph, tl);
  // Stage 0's idle time, less its optimizer step (counted in dp_ms).
  out.breakdown.pp_bubble_ms =
      summary.ranks.empty() ? 0.0 : std::max(0.0, summary.ranks.front().bubble_ms - pipe.optimizer_ms);
  out.stage.layers_per_chunk = m.num_layers / (c.pp * c.vpp);
  out.stage.layers_per_stage = m.num_layers / c.pp;
  out.stage.micro_batches = micro_batches;
  out.stage.chunk_forward_ms = pipe.chunk.forward_ms;
  out.stage.chunk_backward_ms = pipe.chunk.backward_ms;
  out.stage.layer_forward_comm_ms = tp_fwd + cp_exposed + a2a + etp_agrs;
  out.stage.layer_backward_comm_ms = tp_fwd + cp_exposed + a2a + etp_agrs;
  out.stage.optimizer_ms = pipe.optimizer_ms;
  // Every stage's optimizer step lasts as long, so the iteration is the last backward's end plus one.
  out.stage.pipeline_ms = out.iteration_ms - pipe.optimizer_ms;
  // MFU: model FLOPs (3 x forward, causal attention, LM head) per iteration over peak.
  const double tokens = as_double(s.workload.global_batch_size) * seq;
  const double model_flops = 3.0 * tokens * model::forward_flops_per_token(m, s.workload.seq_len);
  // The peak of the model's datatype: fp32 for 4-byte elements, else BF16 (FP16 where the GPU has no BF16).
  const double half_peak = s.cluster.gpu.peak_flops_per_s_bf16 > 0 ? s.cluster.gpu.peak_flops_per_s_bf16
                                                                   : s.cluster.gpu.peak_flops_per_s_fp16;
  const double peak = m.dtype_bytes == 4 ? s.cluster.gpu.peak_flops_per_s_fp32 : half_peak;
  out.mfu = model_flops / (out.iteration_ms / 1e3 * as_double(world) * peak);
  out.memory_bytes_per_gpu = memory_per_gpu(s, c);
  out.fits = fits_in_memory(s, out.memory_bytes_per_gpu, mem);
  if (trace != nullptr) *trace = FoldingTrace{std::move(built), std::move(tl)};
  check_plausible(out);
  return out;
}

std::vector<FoldingResult> search_mappings(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                           const std::string& mode, unsigned threads, ThreadsStarted* started, Progress* progress) {
  if (mode != "coupled" && mode != "folded")
    throw Error(ErrorKind::Input, fmt::format("unknown search mode '{}' (coupled, folded)", mode));
  const model::ModelSpec& m = s.model;
  const std::int64_t world = s.cluster.world_size();
  const std::int64_t gpn = s.cluster.gpus_per_node;
  std::vector<FoldingConfig> configs;
  auto divides = [](std::int64_t a, std::int64_t b) { return b % a == 0; };
  for (std::int64_t tp = 1; tp <= gpn; tp *= 2)
    for (std::int64_t cp = 1; cp <= 16; cp *= 2)
      for (std::int64_t pp = 1; pp <= 32; pp *= 2) {
        if (!divides(tp * cp * pp, world) || !divides(pp, m.num_layers)) continue;
        const std::int64_t dp = world / (tp * cp * pp);
        for (std::int64_t vpp = 1; vpp <= 4; vpp *= 2) {
          if ((vpp > 1 && pp == 1) || !divides(pp * vpp, m.num_layers)) continue;
          for (std::int64_t ep = 1; ep <= m.moe.num_experts; ep *= 2) {
            if (!divides(ep, m.moe.num_experts)) continue;
            for (std::int64_t etp = 1; etp <= gpn; etp *= 2) {
              if (!divides(etp * ep * pp, world)) continue;
              if (mode == "coupled" && (etp != tp || !divides(ep, dp * cp))) continue;
              for (std::int64_t mb : {1, 2, 4}) configs.push_back({tp, cp, pp, vpp, ep, etp, mb, 0, 0});
            }
          }
        }
      }
  std::vector<std::optional<FoldingResult>> priced(configs.size());
  if (progress != nullptr) progress->add_total(configs.size());
  const unsigned started_now = parallel_for(configs.size(), threads, [&](std::size_t i) {
    try {
      priced[i] = price_mapping(s, costs, configs[i]);
    } catch (const Error& e) {
      // An invalid combination is skipped; one too large to simulate is not:
      // the search would silently answer from the others.
      if (e.kind() == ErrorKind::Limit) {
        const FoldingConfig& c = configs[i];
        throw Error(ErrorKind::Limit,
                    fmt::format("mapping tp {} cp {} pp {} vpp {} ep {} etp {} mb {}: {}", c.tp, c.cp, c.pp, c.vpp,
                                c.ep, c.etp, c.micro_batch, e.reason()));
      }
      if (e.kind() != ErrorKind::Input) throw;
    }
    if (progress != nullptr) progress->advance();
  });
  if (started != nullptr) started->record(threads, configs.size(), started_now);
  std::vector<FoldingResult> out;
  for (auto& p : priced)
    if (p) out.push_back(std::move(*p));
  std::stable_sort(out.begin(), out.end(), [](const FoldingResult& a, const FoldingResult& b) {
    if (a.fits != b.fits) return a.fits;
    if (a.iteration_ms != b.iteration_ms) return a.iteration_ms < b.iteration_ms;
    return std::tie(a.config.tp, a.config.cp, a.config.pp, a.config.ep, a.config.etp, a.config.vpp,
                    a.config.micro_batch) < std::tie(b.config.tp, b.config.cp, b.config.pp, b.config.ep, b.config.etp,
                                                     b.config.vpp, b.config.micro_batch);
  });
  return out;
}

}  // namespace moeplan::plan
