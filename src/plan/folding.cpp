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

bool has_dense_blocks(const model::ModelSpec& m) { return m.num_moe_layers() < m.num_layers; }

// The MoE and dense blocks pipeline stage `stage` holds. Megatron-Core gives
// model chunk c of stage r the layers of virtual stage c pp + r, each
// L / (pp vpp) consecutive blocks (the pipeline builder's order). A model of
// MoE blocks only has L / pp of them on every stage.
struct StageLayers {
  double moe = 0;
  double dense = 0;
};
StageLayers stage_layers(const model::ModelSpec& m, const FoldingConfig& c, std::int64_t stage) {
  if (!has_dense_blocks(m)) return {as_double(m.num_layers) / as_double(c.pp), 0.0};
  if (m.num_layers % (c.pp * c.vpp) != 0) throw_input_error("parallelism.pp", "layers do not split over pp x vpp");
  const std::int64_t per_chunk = m.num_layers / (c.pp * c.vpp);
  StageLayers n;
  for (std::int64_t chunk = 0; chunk < c.vpp; ++chunk)
    for (std::int64_t i = 0; i < per_chunk; ++i)
      (m.moe_layer[static_cast<std::size_t>((chunk * c.pp + stage) * per_chunk + i)] ? n.moe : n.dense) += 1.0;
  return n;
}

// A dense block's FFN weights, split over tp as Megatron-Core's MLP is.
double dense_ffn_params(const model::ModelSpec& m) {
  return as_double(model::ffn_params(m.d_model, m.ffn_hidden, m.ffn_type, m.linear_bias));
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

namespace {

// What one GPU of pipeline stage `stage` holds: its blocks (MoE blocks:
// attention, norms, router, shared and routed experts; dense blocks: attention,
// norms and the dense FFN), plus, with `ends`, the word embedding (first stage)
// or the LM head and final norm (last stage), both when pp = 1.
HeldParams stage_held_params(const model::ModelSpec& m, const FoldingConfig& c, std::int64_t stage, bool ends) {
  const double d = as_double(m.d_model);
  // Megatron-Core TP splits the attention and shared-expert weights (and the
  // Q, K, V biases) over tp; norms, the router and MLA's down-projections stay
  // whole on every TP rank (their gradients are all-reduced over tp under
  // sequence parallelism).
  const double attention = model::attention_params_per_rank(m, c.tp);
  const double norms = 2.0 * as_double(model::norm_params(m));
  const double router = d * as_double(m.moe.num_experts) + (m.moe.shared_expert_gate ? d : 0.0);
  const double shared =
      as_double(m.moe.num_shared_experts) *
      as_double(model::ffn_params(m.d_model, m.moe.shared_expert_ffn_hidden, m.moe.expert_type, m.linear_bias)) /
      as_double(c.tp);
  const double expert =
      as_double(model::ffn_params(m.d_model, m.moe.expert_ffn_hidden, m.moe.expert_type, m.linear_bias));
  const double dense_ffn = has_dense_blocks(m) ? dense_ffn_params(m) / as_double(c.tp) : 0.0;
  // The first stage holds the word embedding (vocabulary split over tp) and any
  // learned positions; the last the LM head (a copy of the word embedding when
  // tied) and the final norm. With pp = 1 one stage holds both.
  const double words = as_double(m.vocab_size) * d / as_double(c.tp);
  const double first = words + as_double(m.max_position_embeddings) * d;
  const double last = words + as_double(model::norm_params(m));
  double end_params = 0;
  if (ends) {
    if (c.pp == 1)
      end_params = (m.tie_embeddings ? first : first + words) + as_double(model::norm_params(m));
    else if (stage == 0)
      end_params = first;
    else if (stage == c.pp - 1)
      end_params = last;
  }
  const StageLayers n = stage_layers(m, c, stage);
  HeldParams here;
  here.dense = n.moe * (attention + norms + router + shared) + n.dense * (attention + norms + dense_ffn) + end_params;
  here.expert = n.moe * as_double(m.moe.num_experts) / as_double(c.ep) * expert / as_double(c.etp);
  return here;
}

// The stage that holds the most parameters stands for the pipeline.
HeldParams largest_stage(const model::ModelSpec& m, const FoldingConfig& c, bool ends) {
  HeldParams h;
  for (std::int64_t stage = 0; stage < c.pp; ++stage) {
    const HeldParams here = stage_held_params(m, c, stage, ends);
    if (stage == 0 || here.dense + here.expert > h.dense + h.expert) h = here;
  }
  return h;
}

}  // namespace

HeldParams held_params_of_layers(const model::ModelSpec& m, const FoldingConfig& c) {
  return largest_stage(m, c, false);
}

HeldParams held_params(const model::ModelSpec& m, const FoldingConfig& c) { return largest_stage(m, c, true); }

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
  // The rest, 15/34: attention 11 (QKV input 2, Q and K 4, V 2, projection
  // input 2, dropout mask 1, in units of s b h) and two LayerNorm inputs 4.
  // MLA stores Q and K of h x qk and V and the projection input of h x v per
  // token (split over tp by heads), and its latents whole: the q and kv
  // latents, each as a norm input and an up-projection input (gathered over
  // tp, multi_latent_attention.py), 4 (q_lora + kv_lora) bytes per token at
  // 2-byte elements.
  double attention_share = 1.0 - mlp_share;
  double latent_bytes = 0;
  if (m.mla) {
    const double heads = as_double(m.num_heads);
    attention_share = (7.0 * d + 4.0 * heads * as_double(m.head_dim + m.value_head_dim())) / (34.0 * d);
    latent_bytes =
        4.0 * as_double(m.mla->q_lora_rank.value_or(0) + m.mla->kv_lora_rank) * tokens_local * (b / 2.0);
  }
  const double moe_scale = as_double(m.moe.top_k) * m.moe.capacity_factor.value_or(1.0) *
                           as_double(m.moe.expert_ffn_hidden) / (4.0 * d) * as_double(c.tp) / as_double(c.etp);
  const double shared_scale = as_double(m.moe.num_shared_experts * m.moe.shared_expert_ffn_hidden) / (4.0 * d);
  // A dense block's MLP: its hidden over the 4h of the 34, split over tp like attention.
  const double dense_scale = as_double(m.ffn_hidden) / (4.0 * d);
  double per_layer = dense_part * (attention_share + mlp_share * (moe_scale + shared_scale)) + latent_bytes;
  double per_dense_layer = dense_part * (attention_share + mlp_share * dense_scale) + latent_bytes;
  // Recomputation (Korthikanti et al. 2023): none adds the attention scores
  // 5 a s / h per 34 (no flash attention); full keeps each layer's input only
  // (2 s b h / tp) and recomputes one layer at a time.
  if (s.schedule.recompute == "none") {
    const double scores = 1.0 + 5.0 * as_double(m.num_heads) * seq / as_double(c.cp) / d / 34.0;
    per_layer *= scores;
    per_dense_layer *= scores;
  }
  const double full_layer = has_dense_blocks(m) ? std::max(per_layer, per_dense_layer) : per_layer;
  if (s.schedule.recompute == "full")
    per_layer = per_dense_layer = 2.0 * tokens_local * d / as_double(c.tp) * (b / 2.0);
  // 1F1B keeps pp - r micro-batches in flight on stage r (pp on the first);
  // interleaving adds (pp - 1) / (pp vpp). The stage holding the most counts.
  double activations = 0;
  for (std::int64_t stage = 0; stage < c.pp; ++stage) {
    const double in_flight =
        std::min(as_double(c.pp - stage), as_double(micro_batches)) *
        (c.vpp > 1 ? 1.0 + (as_double(c.pp) - 1.0) / (as_double(c.pp) * as_double(c.vpp)) : 1.0);
    const StageLayers n = stage_layers(m, c, stage);
    activations = std::max(activations, (per_layer * n.moe + per_dense_layer * n.dense) * in_flight);
  }
  bytes += activations;
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
  const std::int64_t local_seq = std::max<std::int64_t>(1, w.seq_len / c.cp);
  const double core_ms = costs.attention_core(m, local_seq, local_seq, core_flops).value;
  const double att_fwd = costs.compute(OpClass::Gemm, proj_flops).value + core_ms;
  const double act_bytes = tokens_local * d * b;  // one layer's activation on a tp group
  const double tp_fwd =
      comm(costs, OpClass::AllGather, tp_g, act_bytes) + comm(costs, OpClass::ReduceScatter, tp_g, act_bytes);
  // CP: cp - 1 ring steps of this rank's K and V block, overlapped with attention compute.
  // With MLA the ring carries every head's up-projected key (qk wide) and value (v wide).
  const double kv_bytes = m.mla ? tokens_local * as_double(m.num_heads * (m.head_dim + m.value_head_dim())) /
                                      as_double(c.tp) * b
                                : 2.0 * tokens_local * as_double(m.num_kv_heads * m.head_dim) / as_double(c.tp) * b;
  const double cp_fwd =
      c.cp > 1 ? as_double(c.cp - 1) * costs.communication(OpClass::P2P, cp_pair, kv_bytes).value : 0.0;
  const double cp_exposed = std::max(0.0, cp_fwd - core_ms);
  const double router = costs.compute(OpClass::Gemm, moe.gating_forward_flops).value;
  // By shape when the profile has a GEMM shape model; else the gemm line on the FLOPs.
  const double experts_fwd = cost::expert_ffn_time(costs, m, ps, moe, false, 1.0).value;
  const double experts_bwd = cost::expert_ffn_time(costs, m, ps, moe, true, 1.0).value;
  const double a2a = 2 * comm(costs, OpClass::A2A, ep_g, moe.dispatch_bytes);
  const double etp_agrs = comm(costs, OpClass::AllGather, etp_g, moe.etp_allgather_bytes) +
                          comm(costs, OpClass::ReduceScatter, etp_g, moe.etp_reducescatter_bytes);
  const double layer_fwd = att_fwd + tp_fwd + cp_exposed + router + experts_fwd + a2a + etp_agrs;
  const double layer_bwd = 2 * att_fwd + tp_fwd + cp_exposed + 2 * router + experts_bwd + a2a + etp_agrs;
  // A dense block (first_k_dense, interval rules): attention, then the dense
  // FFN split over tp with its own AllGather / ReduceScatter (Megatron-Core's MLP under TP + SP).
  const double dense_ffn_flops = tokens_local * (m.ffn_type == model::FfnType::GeluFfn ? 2.0 : 3.0) * 2.0 * d *
                                 as_double(m.ffn_hidden) / as_double(c.tp);
  const double dense_ffn_fwd = has_dense_blocks(m) ? costs.compute(OpClass::Gemm, dense_ffn_flops).value : 0.0;
  const double dense_layer_fwd = att_fwd + tp_fwd + cp_exposed + dense_ffn_fwd + tp_fwd;
  const double dense_layer_bwd = 2 * att_fwd + tp_fwd + cp_exposed + 2 * dense_ffn_fwd + tp_fwd;
  const double layers_per_chunk = as_double(m.num_layers) / as_double(c.pp * c.vpp);
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
  if (has_dense_blocks(m)) {
    // Chunks differ: each virtual stage sums its own blocks. An overlap's
    // saving (the joint search) was priced for chunks of MoE blocks: each MoE
    // block keeps its share of it, dense blocks have nothing to overlap.
    const std::int64_t per_chunk = m.num_layers / (c.pp * c.vpp);
    const double dense_flops_fwd = proj_flops + core_flops + dense_ffn_flops;
    const double forward_saved = saved.chunk_forward_saved_ms / layers_per_chunk;
    const double backward_saved = saved.chunk_backward_saved_ms / layers_per_chunk;
    pipe.chunks.assign(static_cast<std::size_t>(c.pp * c.vpp), sched::PipelineChunkCost{});
    for (std::int64_t v = 0; v < c.pp * c.vpp; ++v) {
      sched::PipelineChunkCost& cc = pipe.chunks[static_cast<std::size_t>(v)];
      cc.p2p_ms = pipe.chunk.p2p_ms;
      cc.p2p_bytes = pipe.chunk.p2p_bytes;
      for (std::int64_t i = v * per_chunk; i < (v + 1) * per_chunk; ++i) {
        const bool moe_block = m.moe_layer[static_cast<std::size_t>(i)];
        cc.forward_ms += moe_block ? layer_fwd - forward_saved : dense_layer_fwd;
        cc.backward_ms += moe_block ? layer_bwd - backward_saved : dense_layer_bwd;
        cc.forward_flops += moe_block ? layer_flops_fwd : dense_flops_fwd;
        cc.backward_flops += moe_block ? layer_flops_bwd : 2 * dense_flops_fwd;
      }
    }
  }
  pipe.optimizer_ms = dp_ms - saved.optimizer_saved_ms;
  pipe.optimizer_bytes = (held.dense + held.expert) * (4 + b);
  pipe.limits = s.limits;
  sched::BuiltSchedule built = sched::build_pipeline(pipe);
  built.overlap_compute_slowdown = costs.overlap_compute_slowdown();
  built.overlap_comm_slowdown = costs.overlap_comm_slowdown();
  sim::Timeline tl = run_schedule(built);
  // Stage 0 runs the last backward, so the iteration ends with its optimizer step.
  out.iteration_ms = tl.makespan_ms;
  // Breakdown for the stage: per micro-batch costs times micro-batches and
  // layers per stage; with dense blocks, for the stage holding the most MoE blocks.
  StageLayers n = stage_layers(m, c, 0);
  for (std::int64_t stage = 1; stage < c.pp; ++stage)
    if (const StageLayers here = stage_layers(m, c, stage); here.moe > n.moe) n = here;
  const double per_stage = as_double(micro_batches) * n.moe;
  const double per_stage_dense = as_double(micro_batches) * n.dense;
  out.breakdown.attention_ms = (per_stage + per_stage_dense) * 3 * att_fwd;
  out.breakdown.moe_compute_ms =
      per_stage * (3 * router + experts_fwd + experts_bwd) + per_stage_dense * 3 * dense_ffn_fwd;
  out.breakdown.a2a_ms = per_stage * 2 * a2a;
  out.breakdown.agrs_ms =
      per_stage * 2 * (tp_fwd + etp_agrs + cp_exposed) + per_stage_dense * 2 * (2 * tp_fwd + cp_exposed);
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
