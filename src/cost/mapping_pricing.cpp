#include <moeplan/cost/mapping_pricing.hpp>

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/context_parallel.hpp>
#include <moeplan/cost/deepep.hpp>
#include <moeplan/cost/expert_pricing.hpp>
#include <moeplan/cost/fp8_casts.hpp>
#include <moeplan/cost/host_issue.hpp>
#include <moeplan/cost/memory_bound_kernels.hpp>
#include <moeplan/cost/model_ends.hpp>
#include <moeplan/cost/recompute_pricing.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/model/model_stats.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/model/validate.hpp>
#include <moeplan/parallel/rank_groups.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {


// Counts price_layers' calls (layer_pricings); relaxed: only the total matters.
std::atomic<std::uint64_t> pricings{0};
using model::OpClass;

// The shape of a kind of group of the mapping (the first group stands for all;
// all groups of the kind run at once).
GroupShape group_of(const parallel::RankGroups& groups, const model::ClusterSpec& cluster) {
  return group_shape(groups.front(), cluster);
}

double comm(const CostModel& costs, OpClass op, const GroupShape& g, double bytes) {
  return costs.communication(op, g, bytes).value;
}

// A point-to-point transfer between two members of a group (pipeline
// neighbours, context-parallel ring steps): every such pair of the node at once.
GroupShape pair_of(const parallel::RankGroups& groups, const model::ClusterSpec& cluster) {
  const std::vector<std::int64_t>& g = groups.front();
  return group_shape(g.size() > 1 ? std::vector<std::int64_t>{g[0], g[1]} : g, cluster);
}

// Megatron-FSDP's collectives of one block and micro-batch (docs/cost-model.md, "FSDP").
struct FsdpBlockTimes {
  /// Per pass, what is not hidden behind the block's compute, plus the
  /// compute slowdown beside what is.
  double forward_exposed = 0;
  double backward_exposed = 0;
  double hidden = 0;  ///< both passes' collectives hidden behind compute
};

// Before its forward and again before its backward the block's weights are
// all-gathered, and discarded after each (ZeRO-3: Rajbhandari et al. 2020,
// sections 5.3 and 7.2.2; PyTorch FSDP2's reshard_after_forward default),
// after its backward its gradients reduce-scattered (Megatron's main
// gradients: fp32, or bf16 under grad_reduce_in_bf16), over dp x cp (dense) and edp (experts), every micro-batch. Prefetch issues them while the neighbouring block computes (one
// block's compute, per direction, hides them; both backward collectives share
// the data-parallel links, so they add); the compute beside them slows by the
// profile's overlap_compute_slowdown (the contention rule).
FsdpBlockTimes fsdp_block_times(const CostModel& costs, const HeldParams& block, double weight_bytes,
                                double grad_bytes, const GroupShape& dense_g, const GroupShape& expert_g,
                                double compute_forward, double compute_backward) {
  const double gather = comm(costs, OpClass::AllGather, dense_g, block.dense * weight_bytes) +
                        comm(costs, OpClass::AllGather, expert_g, block.expert * weight_bytes);
  const double reduce = comm(costs, OpClass::ReduceScatter, dense_g, block.dense * grad_bytes) +
                        comm(costs, OpClass::ReduceScatter, expert_g, block.expert * grad_bytes);
  const double slow = costs.overlap_compute_slowdown() - 1.0;
  const auto exposed = [&](double collectives, double compute) {
    return std::max(0.0, collectives - compute) + slow * std::min(collectives, compute);
  };
  FsdpBlockTimes out;
  out.forward_exposed = exposed(gather, compute_forward);
  out.backward_exposed = exposed(gather + reduce, compute_backward);
  out.hidden = std::min(gather, compute_forward) + std::min(gather + reduce, compute_backward);
  return out;
}

// One EP dispatch (the combine moves the same back): Megatron-Core's AlltoAll
// of top-k copies, or DeepEP's (HybridEP's) per-node (per-NVLink-domain) and
// per-GPU copies (docs/cost-model.md, "DeepEP dispatcher", "HybridEP
// dispatcher"). None prices a permutation: moeplan prices none.
double ep_dispatch_ms(const model::ScenarioSpec& s, const CostModel& costs, const GroupShape& ep_g,
                      std::int64_t etp, const MoeLayerSizes& moe) {
  if (!s.schedule.deduplicating_dispatcher()) return comm(costs, OpClass::A2A, ep_g, moe.dispatch_bytes);
  if (s.schedule.moe_dispatcher == "hybridep")
    check_hybridep(s, ep_g, etp);
  else
    check_deepep(s, ep_g, etp);
  const double token_bytes = as_double(s.model.d_model) * as_double(s.model.dtype_bytes);
  return deepep_dispatch_time(costs, ep_g, deepep_buffers(s.model.moe, ep_g, moe.tokens_per_rank, token_bytes)).value;
}

}  // namespace

std::uint64_t layer_pricings() { return pricings.load(std::memory_order_relaxed); }

double LayerPrices::layers_per_chunk() const {
  return static_cast<double>(moe_block.size()) / as_double(config.pp * config.vpp);
}

LayerPrices price_layers(const model::ScenarioSpec& s, const CostModel& costs, const MappingConfig& in,
                         const MemoryModel& mem) {
  pricings.fetch_add(1, std::memory_order_relaxed);
  if (!costs.has(OpClass::Elementwise, model::LinkClass::Local))
    throw_input_error("costs", "the profile has no elementwise line: the Megatron-style family prices the norms, "
                               "activations, token permutation, loss and optimizer step on it (datasheet-profile "
                               "derives one from the GPU's memory bandwidth; calibrate --backend cuda measures one)");
  const model::ModelSpec& m = s.model;
  LayerPrices out;
  out.config = in;
  out.precision = s.workload.precision;
  out.recompute = s.schedule.recompute;
  MappingConfig& c = out.config;
  const std::int64_t world = s.cluster.world_size();
  const parallel::Mapping map =
      parallel::make_mapping({world, c.tp, c.cp, c.pp, c.ep, c.etp, c.vpp, s.parallel.order, m.moe.num_experts, true});
  c.dp = map.dp;
  c.edp = map.edp;
  out.chunk_layers = chunk_layer_counts(m, c);
  model::validate_tensor_parallel_heads(m, c.tp);
  if (s.workload.seq_len % (2 * c.cp * c.tp) != 0) throw_input_error("workload.seq_len", "sequence does not split");
  if (s.workload.global_batch_size % (c.micro_batch * c.dp) != 0)
    throw_input_error("workload.global_batch_size", "batch does not split into micro-batches over dp");
  const std::int64_t micro_batches = s.workload.global_batch_size / (c.micro_batch * c.dp);
  if (c.vpp > 1 && micro_batches % c.pp != 0)
    throw_input_error("parallelism.vpp", "micro-batches not a multiple of pp");
  out.micro_batches = micro_batches;
  out.moe_block = m.moe_layer;
  out.dense_blocks = has_dense_blocks(m);

  const model::ClusterSpec& cl = s.cluster;
  const GroupShape tp_g = group_of(map.attention.at("tp"), cl), dp_cp_g = group_of(map.attention.at("dp-cp"), cl),
                   ep_g = group_of(map.expert.at("ep"), cl), etp_g = group_of(map.expert.at("etp"), cl),
                   edp_g = group_of(map.expert.at("edp"), cl),
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
  const MoeLayerSizes moe = moe_layer_sizes(m, ps, w);
  // Attention, split over tp (heads) and cp (load-balanced causal chunks):
  // projections of the local tokens, 2 x (2 d h k + 2 d g k) FLOPs each (GQA:
  // g KV heads). Weights only: bias adds are element-wise GEMM epilogues, not
  // multiply-adds, and the MFU numerator counts weights only too. The core is
  // the project's one causal rule: every query-key pair of the sequence once.
  const double tokens_local = mbs * seq / as_double(c.cp);
  const double proj_flops = attention_projection_flops(m, tokens_local) / as_double(c.tp);
  const std::int64_t local_seq = std::max<std::int64_t>(1, w.seq_len / c.cp);
  // Sliding-window blocks (GPT-OSS) and chunked-attention blocks (Llama 4)
  // compute fewer pairs. Each block is priced at the model's mean core (the
  // windowed or chunked blocks and the full ones interleave, so a stage's sum
  // is off by at most half a block's difference). The attention shape model
  // prices causal tiles and the ring of context parallelism passes every
  // earlier block: neither is built for a window or chunks, so both refuse them.
  const double windows = as_double(m.num_window_layers());
  const double chunks = as_double(m.num_chunk_layers());
  if (windows > 0 && c.cp > 1)
    throw_input_error("parallelism.cp", "context parallelism with sliding-window attention is not modelled");
  if (chunks > 0 && c.cp > 1)
    throw_input_error("parallelism.cp", "context parallelism with chunked attention is not modelled");
  if (windows > 0 && costs.attention_shape_model())
    throw_input_error("model.sliding_window", "the profile's attention shape model prices causal tiles, not a window");
  if (chunks > 0 && costs.attention_shape_model())
    throw_input_error("model.attention_chunk_size",
                      "the profile's attention shape model prices causal tiles, not chunks");
  const model::RecomputeSpec& recompute = s.schedule.recompute;
  if (windows + chunks > 0 && s.schedule.attention_backend == "unfused" && recompute.granularity != "full" &&
      !model::recomputes_module(recompute, "core_attn"))
    throw_input_error("schedule.attention_backend",
                      fmt::format("an unfused kernel's score matrix under {} is not modelled (flash stores none)",
                                  windows > 0 ? "a sliding window" : "chunked attention"));
  const double full_core_flops = mbs * attention_core_flops(m, seq, seq) / (as_double(c.tp) * as_double(c.cp));
  // cp is 1 whenever a window or chunks are priced (refused above).
  const double window_core_flops =
      windows > 0 ? mbs * attention_core_flops(m, seq, seq, as_double(m.sliding_window)) / as_double(c.tp) : 0.0;
  const double chunk_core_flops =
      chunks > 0 ? mbs * attention_core_flops(m, seq, seq, 0.0, as_double(m.attention_chunk_size)) / as_double(c.tp)
                 : 0.0;
  const double window_share = windows / as_double(m.num_layers);
  const double chunk_share = chunks / as_double(m.num_layers);
  const double full_share = 1.0 - window_share - chunk_share;
  const double core_flops =
      full_share * full_core_flops + window_share * window_core_flops + chunk_share * chunk_core_flops;
  // The core's forward, and its backward at twice the FLOPs as one kernel
  // (the attention line's startup once per kernel, docs/cost-model.md).
  const auto core_time = [&](model::AttentionPass pass) {
    const double factor = pass == model::AttentionPass::Backward ? 2.0 : 1.0;
    const auto core = [&](double flops) {
      return costs.attention_core(m, local_seq, local_seq, factor * flops, pass).value;
    };
    return full_share * core(full_core_flops) + (windows > 0 ? window_share * core(window_core_flops) : 0.0) +
           (chunks > 0 ? chunk_share * core(chunk_core_flops) : 0.0);
  };
  const double core_ms = core_time(model::AttentionPass::Forward);
  const double core_backward_ms = core_time(model::AttentionPass::Backward);
  // Under an FP8 recipe the linear layers' GEMMs (projections, FFNs, experts)
  // take FP8 operands; the core, the router and the LM head stay in BF16
  // (docs/cost-model.md, "FP8").
  const model::Precision precision = s.workload.precision;
  const bool fp8 = model::is_fp8(precision);
  // Weight gradients add into main gradients of this element (fp32, or bf16
  // under grad_reduce_in_bf16): the GEMMs read and write it.
  const double grad_bytes = model::main_grad_bytes(s.schedule);
  // The projections as the GEMMs Megatron-Core runs (QKV, or MLA's down and
  // up projections, and O), by shape when the profile has a shape model.
  const LinearPassTimes projections =
      linear_pass_times(costs, attention_linear_gemms(m, tokens_local, as_double(c.tp)), fp8, grad_bytes);
  const double att_fwd = projections.forward.value + core_ms;
  const double att_bwd = projections.backward.value + core_backward_ms;
  const double act_bytes = tokens_local * d * b;  // one layer's activation on a tp group
  const double tp_fwd =
      comm(costs, OpClass::AllGather, tp_g, act_bytes) + comm(costs, OpClass::ReduceScatter, tp_g, act_bytes);
  // CP (docs/cost-model.md, "Context parallelism"): the exchange of the
  // scenario's cp_comm_type, what the attention core does not hide. With MLA
  // K and V are every head's up-projected key (qk wide) and value (v wide).
  CpTensors cp_tensors;
  cp_tensors.q_bytes = tokens_local * as_double(m.num_heads * m.head_dim) / as_double(c.tp) * b;
  cp_tensors.kv_bytes = m.mla ? tokens_local * as_double(m.num_heads * (m.head_dim + m.value_head_dim())) /
                                    as_double(c.tp) * b
                              : 2.0 * tokens_local * as_double(m.num_kv_heads * m.head_dim) / as_double(c.tp) * b;
  cp_tensors.o_bytes = tokens_local * as_double(m.num_heads * m.value_head_dim()) / as_double(c.tp) * b;
  model::ParallelSpec cp_parallel = s.parallel;
  cp_parallel.tp = c.tp;
  cp_parallel.cp = c.cp;
  model::validate_context_parallel(m, cp_parallel);
  const std::vector<std::int64_t>& cp_ranks = map.attention.at("cp").front();
  const CpExchange cp = cp_exchange(
      costs, cp_parallel, cp_tensors, core_ms,
      cp_groups(cp_ranks, cp_parallel.hierarchical_cp_sizes.empty() ? 1 : cp_parallel.hierarchical_cp_sizes.front(),
                cl));
  const double cp_exposed = cp.forward_ms;
  // The MoE block's parts; a dense model has no MoE block to price.
  const bool moe_blocks = !m.is_dense();
  const double router = moe_blocks ? costs.compute(OpClass::Gemm, moe.gating_forward_flops).value : 0.0;
  // By shape when the profile has a GEMM shape model; else the gemm line on the FLOPs.
  const double experts_fwd = moe_blocks ? expert_ffn_time(costs, m, ps, moe, false, 1.0, fp8).value : 0.0;
  const double experts_bwd = moe_blocks ? expert_ffn_time(costs, m, ps, moe, true, 1.0, fp8, grad_bytes).value : 0.0;
  // The casts in front of those FP8 GEMMs: the attention block's, an MoE
  // block's experts', a dense block's FFN's (none under bf16).
  CastElements attention_casts, moe_casts, dense_casts;
  if (fp8) {
    add_cast_elements(attention_casts, attention_linear_gemms(m, tokens_local, as_double(c.tp)));
    if (moe_blocks) add_cast_elements(moe_casts, expert_forward_gemms(m, ps, moe, 1.0));
    if (moe_blocks && s.schedule.fused_grouped_mlp)
      remove_fused_grouped_mlp_casts(moe_casts, routed_expert_forward_gemms(m, ps, moe, 1.0));
    add_cast_elements(dense_casts,
                      ffn_forward_gemms(m.ffn_type, tokens_local, d, as_double(m.ffn_hidden) / as_double(c.tp), 1.0, b));
  }
  const double mb = as_double(micro_batches);
  const CastTimes att_cast = fp8_cast_times(costs, precision, attention_casts, mb);
  const CastTimes moe_cast = fp8_cast_times(costs, precision, moe_casts, mb);
  const CastTimes dense_cast = fp8_cast_times(costs, precision, dense_casts, mb);
  out.attention_cast_forward_ms = att_cast.forward.value;
  out.attention_cast_backward_ms = att_cast.backward.value;
  out.experts_cast_forward_ms = moe_cast.forward.value;
  out.experts_cast_backward_ms = moe_cast.backward.value;
  out.dense_ffn_cast_forward_ms = out.dense_blocks ? dense_cast.forward.value : 0.0;
  out.dense_ffn_cast_backward_ms = out.dense_blocks ? dense_cast.backward.value : 0.0;
  const double a2a = moe_blocks ? 2 * ep_dispatch_ms(s, costs, ep_g, c.etp, moe) : 0.0;
  const double etp_agrs = moe_blocks ? comm(costs, OpClass::AllGather, etp_g, moe.etp_allgather_bytes) +
                                           comm(costs, OpClass::ReduceScatter, etp_g, moe.etp_reducescatter_bytes)
                                     : 0.0;
  out.attention_ms = att_fwd;
  out.tp_comm_ms = tp_fwd;
  out.cp_exposed_ms = cp_exposed;
  out.cp_exposed_backward_ms = cp.backward_ms;
  out.router_ms = router;
  out.experts_forward_ms = experts_fwd;
  out.experts_backward_ms = experts_bwd;
  out.a2a_ms = a2a;
  out.etp_comm_ms = etp_agrs;
  // The memory-bound kernels (docs/cost-model.md, "Memory-bound kernels").
  const BlockTokens block_tokens{tokens_local / as_double(c.tp), tokens_local, as_double(c.tp)};
  const auto elementwise_ms = [&](double bytes) { return costs.compute(OpClass::Elementwise, bytes).value; };
  {
    const PassBytes common = block_common_bytes(m, block_tokens);
    out.block_memory_forward_ms = elementwise_ms(common.forward);
    out.block_memory_backward_ms = elementwise_ms(common.backward);
    if (moe_blocks) {
      const PassBytes ffn = moe_ffn_bytes(m, block_tokens, moe, as_double(c.ep), s.schedule.fused_grouped_mlp);
      out.moe_memory_forward_ms = elementwise_ms(ffn.forward);
      out.moe_memory_backward_ms = elementwise_ms(ffn.backward);
    }
    if (out.dense_blocks) {
      const PassBytes ffn = dense_ffn_bytes(m, block_tokens);
      out.dense_memory_forward_ms = elementwise_ms(ffn.forward);
      out.dense_memory_backward_ms = elementwise_ms(ffn.backward);
    }
  }
  out.ends = price_model_ends(costs, m, block_tokens, tp_g, s.schedule.fused_cross_entropy(),
                              grad_bytes);
  // An MoE block's compute, then its communication, per direction.
  const double compute_forward = att_fwd + router + experts_fwd + att_cast.forward.value + moe_cast.forward.value +
                                 out.block_memory_forward_ms + out.moe_memory_forward_ms;
  const double compute_backward = att_bwd + 2 * router + experts_bwd + att_cast.backward.value +
                                  moe_cast.backward.value + out.block_memory_backward_ms + out.moe_memory_backward_ms;
  out.layer_forward_ms = compute_forward + tp_fwd + cp_exposed + a2a + etp_agrs;
  out.layer_backward_ms = compute_backward + tp_fwd + cp.backward_ms + a2a + etp_agrs;
  out.layer_comm_ms = tp_fwd + cp_exposed + a2a + etp_agrs;
  // The host's issue time (docs/cost-model.md, "Host time"): where the
  // dispatcher waits on the host for its token counts, an MoE block's forward
  // pass (from one block's wait to the next's) lasts at least as long as the
  // host takes to issue it; the GPU waits for the rest. The MoE layer alone is
  // what selective recomputation of "moe" reruns, wait included.
  // The MoE layer's own forward on the GPU (router, dispatch, experts, combine, casts, memory-bound kernels).
  const double moe_layer_forward =
      moe_blocks ? router + experts_fwd + a2a + etp_agrs + moe_cast.forward.value + out.moe_memory_forward_ms : 0.0;
  double moe_layer_host_wait = 0;
  if (moe_blocks && costs.host_issue() && moe_dispatch_waits_on_host(m.moe, s.schedule.cuda_graphs)) {
    const double local_experts = as_double(m.moe.num_experts) / as_double(c.ep);
    const BlockHostTimes host = moe_block_host_ms(*costs.host_issue(), s.schedule.cuda_graphs, local_experts);
    out.host_wait_ms = host_wait_ms(host.block_ms, out.layer_forward_ms);
    moe_layer_host_wait = host_wait_ms(host.moe_layer_ms, moe_layer_forward);
    out.layer_forward_ms += out.host_wait_ms;
  }
  // Megatron-Core's 1F1B A2A overlap (docs/cost-model.md, "EP AlltoAll
  // overlap"): in the steady state a micro-batch's forward and another's
  // backward run layer by layer together, each one's dispatch and combine
  // beside the other's compute. The steady pairs of the first stage: m - 1 with
  // one stage (a pass cannot pair with its own backward), m - pp + 1 with more;
  // the warm-up and cool-down passes keep their AlltoAll exposed. The compute
  // beside it slows by the profile's overlap_compute_slowdown.
  if (s.schedule.a2a_overlap && moe_blocks && c.ep > 1) {
    const double m_b = as_double(micro_batches);
    const double pairs = std::max(0.0, c.pp == 1 ? m_b - 1.0 : m_b - as_double(c.pp) + 1.0);
    const double steady = pairs / m_b;
    const double slow = costs.overlap_compute_slowdown() - 1.0;
    const double hidden_forward = steady * std::min(a2a, compute_backward);
    const double hidden_backward = steady * std::min(a2a, compute_forward);
    out.layer_forward_ms -= hidden_forward * (1.0 - slow);
    out.layer_backward_ms -= hidden_backward * (1.0 - slow);
    out.a2a_hidden_ms = hidden_forward + hidden_backward;
  }
  // A dense block (first_k_dense, interval rules): attention, then the dense
  // FFN split over tp with its own AllGather / ReduceScatter (Megatron-Core's MLP under TP + SP).
  // By shape when the profile has a GEMM shape model (as the experts are), else the gemm line on the FLOPs.
  const double dense_ffn_flops = tokens_local * (m.ffn_type == model::FfnType::GeluFfn ? 2.0 : 3.0) * 2.0 * d *
                                 as_double(m.ffn_hidden) / as_double(c.tp);
  const DenseFfnTimes dense_ffn = out.dense_blocks
                                     ? dense_ffn_times(costs, m, tokens_local, as_double(c.tp), fp8, grad_bytes)
                                     : DenseFfnTimes{Milliseconds{0}, Milliseconds{0}};
  out.dense_ffn_ms = dense_ffn.forward.value;
  out.dense_ffn_backward_ms = dense_ffn.backward.value;
  const double dense_memory_forward = out.block_memory_forward_ms + out.dense_memory_forward_ms;
  const double dense_memory_backward = out.block_memory_backward_ms + out.dense_memory_backward_ms;
  out.dense_layer_forward_ms = att_fwd + tp_fwd + cp_exposed + dense_ffn.forward.value + tp_fwd +
                               att_cast.forward.value + out.dense_ffn_cast_forward_ms + dense_memory_forward;
  out.dense_layer_backward_ms = att_bwd + tp_fwd + cp.backward_ms + dense_ffn.backward.value + tp_fwd +
                                att_cast.backward.value + out.dense_ffn_cast_backward_ms + dense_memory_backward;
  // Recomputation (docs/cost-model.md, "Recomputation"): the forward work
  // each recomputed submodule (or, under full, each recomputed block) runs
  // again in the backward pass, before its gradients.
  {
    RecomputeParts parts;
    parts.attention_core_ms = core_ms;
    const auto elementwise = [&](double bytes) { return costs.compute(OpClass::Elementwise, bytes).value; };
    const bool need_elementwise =
        model::recomputes_module(recompute, "layernorm") || model::recomputes_module(recompute, "moe_act");
    if (need_elementwise) {
      // A norm reads and writes each of its tokens' d elements (sequence-parallel: tokens / tp).
      const double norm = elementwise(2.0 * tokens_local * d * b / as_double(c.tp));
      parts.norms_ms = (moe_blocks ? norm : 0.0) + (m.mla ? norm : 0.0);
      parts.dense_norms_ms = m.mla ? norm : 0.0;
      // The activation reads the first GEMM's output (2 f gated, f plain) and
      // writes f, per routed token slot; with etp the slots are gathered over
      // etp and the hidden split over it, the same elements.
      // A clamped GLU (GPT-OSS) reruns its clamps and concatenation too
      // (cost::glu_clamp_bytes' forward).
      const double gated = m.moe.expert_type == model::FfnType::SwiGlu ? 3.0 : 2.0;
      if (moe_blocks)
        parts.moe_activation_ms =
            elementwise(moe.expert_slots * gated * as_double(m.moe.expert_ffn_hidden) * b +
                        glu_clamp_bytes(m, moe, s.schedule.fused_grouped_mlp).forward);
    }
    const OpClass linear = fp8 ? OpClass::GemmFp8 : OpClass::Gemm;
    if (m.mla) {
      // Up-projections: q from its latent (when Q is low-rank), k's no-rope part and v from the kv latent.
      const model::MlaSpec& mla = *m.mla;
      const double heads = as_double(m.num_heads);
      const double q_up = mla.q_lora_rank ? as_double(*mla.q_lora_rank) * heads *
                                                as_double(mla.qk_nope_head_dim + mla.qk_rope_head_dim)
                                          : 0.0;
      const double kv_up = as_double(mla.kv_lora_rank) * heads * as_double(mla.qk_nope_head_dim + mla.v_head_dim);
      parts.mla_up_proj_ms = costs.compute(linear, 2.0 * tokens_local * (q_up + kv_up) / as_double(c.tp)).value;
    }
    parts.dense_mlp_ms = out.dense_blocks ? dense_ffn.forward.value + tp_fwd + out.dense_ffn_cast_forward_ms +
                                                out.dense_memory_forward_ms
                                          : 0.0;
    parts.moe_layer_ms = moe_layer_forward + moe_layer_host_wait;
    if (moe_blocks && m.moe.num_shared_experts > 0) {
      const double gemms = m.moe.expert_type == model::FfnType::SwiGlu ? 3.0 : 2.0;
      parts.shared_experts_ms =
          costs.compute(linear, tokens_local * gemms * 2.0 * d *
                                    as_double(m.moe.num_shared_experts * m.moe.shared_expert_ffn_hidden) /
                                    as_double(c.tp))
              .value;
    }
    parts.moe_block_forward_ms = compute_forward + tp_fwd + cp_exposed + a2a + etp_agrs + out.host_wait_ms;
    parts.dense_block_forward_ms = out.dense_layer_forward_ms;
    const RecomputeTimes extra =
        recompute_times(recompute, parts, full_recompute_share(recompute, out.chunk_layers));
    out.recompute_ms = moe_blocks ? extra.moe_block_ms : 0.0;
    out.dense_recompute_ms = out.dense_blocks ? extra.dense_block_ms : 0.0;
    out.layer_backward_ms += out.recompute_ms;
    out.dense_layer_backward_ms += out.dense_recompute_ms;
  }
  // Megatron-FSDP (docs/cost-model.md, "FSDP"): each block's gathers and
  // reduce-scatter, behind its compute (recomputation left out: what it reruns
  // includes communication).
  const bool fsdp = model::fully_sharded(s.schedule);
  if (fsdp && moe_blocks) {
    const FsdpBlockTimes block =
        fsdp_block_times(costs, block_params(m, c, true), b, grad_bytes, dp_cp_g, edp_g, compute_forward,
                         compute_backward);
    out.layer_forward_ms += block.forward_exposed;
    out.layer_backward_ms += block.backward_exposed;
    out.fsdp_exposed_ms = block.forward_exposed + block.backward_exposed;
    out.fsdp_hidden_ms = block.hidden;
  }
  if (fsdp && out.dense_blocks) {
    const double compute_forward_dense =
        att_fwd + dense_ffn.forward.value + att_cast.forward.value + out.dense_ffn_cast_forward_ms +
        dense_memory_forward;
    const double compute_backward_dense =
        att_bwd + dense_ffn.backward.value + att_cast.backward.value + out.dense_ffn_cast_backward_ms +
        dense_memory_backward;
    const FsdpBlockTimes block = fsdp_block_times(costs, block_params(m, c, false), b, grad_bytes, dp_cp_g, edp_g,
                                                  compute_forward_dense, compute_backward_dense);
    out.dense_layer_forward_ms += block.forward_exposed;
    out.dense_layer_backward_ms += block.backward_exposed;
    out.dense_fsdp_exposed_ms = block.forward_exposed + block.backward_exposed;
  }
  // The ends (embedding, LM head and loss) go to the first and last chunks (plan/mapping_run.cpp).
  // Multi-token prediction (docs/cost-model.md, "The model's ends"): each
  // module on the last stage runs the norms of the hidden state and of the
  // next tokens' embedding (memory-bound, as a block's), their 2d x d
  // projection (column-parallel: a x 2d x d / tp, in the linear layers'
  // precision), one block as priced above (the MoE block when the model has
  // one) and a loss through the shared LM head; the next tokens' embedding
  // lookup and the head cost what the model's ends do.
  if (m.mtp_num_layers > 0) {
    const double k = as_double(m.mtp_num_layers);
    const double projection_flops = 2.0 * tokens_local * 2.0 * d * d / as_double(c.tp);
    const double projection = costs.compute(fp8 ? OpClass::GemmFp8 : OpClass::Gemm, projection_flops).value;
    const double x = block_tokens.sequence_tokens * d * b;
    const bool moe_block = !m.is_dense();
    out.mtp_forward_ms =
        k * ((moe_block ? out.layer_forward_ms : out.dense_layer_forward_ms) + projection +
             elementwise_ms(2 * 2.0 * x) + out.ends.first_forward_ms + out.ends.last_forward_ms);
    out.mtp_backward_ms =
        k * ((moe_block ? out.layer_backward_ms : out.dense_layer_backward_ms) + 2.0 * projection +
             elementwise_ms(2 * 3.0 * x) + out.ends.first_backward_ms + out.ends.last_backward_ms);
  }
  out.p2p_ms = c.pp > 1 ? comm(costs, OpClass::P2P, pp_pair, act_bytes / as_double(c.tp)) : 0.0;
  out.p2p_bytes = c.pp > 1 ? act_bytes / as_double(c.tp) : 0.0;
  // Distributed optimizer (Megatron-Core DDP): after a stage's last backward,
  // the main gradients (fp32, or bf16 under grad_reduce_in_bf16) are reduce-scattered and the updated bf16 parameters
  // all-gathered. Every parameter that is not a routed expert (attention,
  // norms, router, shared experts, embeddings) is reduced over the
  // data-parallel group with context parallelism (dp x cp: CP ranks hold the
  // same weights and see other tokens of the same samples); routed experts
  // over edp. Priced for the stage that holds the most (embedding or LM head).
  // Under Megatron-FSDP the blocks' collectives ran with each block (above):
  // the step keeps the ends' (not FSDP units: docs/cost-model.md, "FSDP").
  const HeldParams held = fsdp ? held_params_of_ends(m, c) : held_params(m, c);
  out.optimizer_ms = comm(costs, OpClass::ReduceScatter, dp_cp_g, held.dense * grad_bytes) +
                     comm(costs, OpClass::AllGather, dp_cp_g, held.dense * b) +
                     comm(costs, OpClass::ReduceScatter, edp_g, held.expert * grad_bytes) +
                     comm(costs, OpClass::AllGather, edp_g, held.expert * b);
  out.optimizer_bytes = (held.dense + held.expert) * (grad_bytes + b);
  // The Adam update of the rank's shard (memory_bound_kernels.hpp): the
  // distributed optimizer shards dense parameters over dp x cp, experts over edp.
  out.optimizer_update_ms = elementwise_ms(
      optimizer_step_bytes(held.dense / as_double(c.dp * c.cp) + held.expert / as_double(c.edp),
                           !model::keeps_master_weights(s.schedule)  ? MasterWeights::none
                           : s.schedule.precision_aware_optimizer     ? MasterWeights::remainders
                                                                      : MasterWeights::fp32,
                           model::adam_moment_bytes(s.schedule)));
  // Megatron-Core DDP's passes over the whole gradient buffers the rank holds
  // (docs/cost-model.md, "Gradient buffer passes"): zeroed before the first
  // micro-batch, checked for NaN and pre-scaled before the reduce-scatter.
  // They run on the compute stream, in series with the passes and the step.
  // Under Megatron-FSDP the blocks' gradients pass through the same unsharded
  // buckets (scaled before each reduce-scatter), so every parameter held counts.
  const HeldParams all_held = fsdp ? held_params(m, c) : held;
  // On the profile's line for these passes when it has one, else the elementwise line.
  const double buffer_bytes = gradient_buffer_pass_bytes(
      all_held.dense, all_held.expert, grad_bytes, s.schedule.check_for_nan_in_grad,
      gradient_prescaling(s.schedule.average_in_collective, c.dp * c.cp, c.edp));
  const std::optional<Milliseconds> streaming = costs.kernel_memory(model::kGradientBufferKernel, buffer_bytes);
  out.gradient_buffer_ms = streaming ? streaming->value : elementwise_ms(buffer_bytes);
  out.optimizer_update_ms += out.gradient_buffer_ms;
  out.optimizer_ms += out.optimizer_update_ms;
  // The layers' share of the gradient reduce-scatter (the ends' embedding and
  // LM head gradients are left out): what an overlap schedule can hide under
  // the last backward pass (the joint search).
  const HeldParams layers_only = fsdp ? HeldParams{} : held_params_of_layers(m, c);
  out.layer_gradient_rs_ms = comm(costs, OpClass::ReduceScatter, dp_cp_g, layers_only.dense * grad_bytes) +
                             comm(costs, OpClass::ReduceScatter, edp_g, layers_only.expert * grad_bytes);
  // Megatron-Core's overlap (docs/cost-model.md, "Data-parallel overlap"):
  // --overlap-grad-reduce launches each bucket's reduce-scatter as its
  // gradients are final, during the last micro-batch's backward pass, so the
  // layers' reduce-scatter hides behind up to that pass on the stage holding
  // the most blocks; --overlap-param-gather all-gathers each bucket as the next
  // iteration's first forward pass reaches it. The ends' (embedding, LM head)
  // collectives stay exposed. The compute they run beside slows by the
  // profile's overlap_compute_slowdown (the contention rule), which the step pays back.
  {
    StageBlocks most = stage_blocks(m, c, 0);
    for (std::int64_t stage = 1; stage < c.pp; ++stage)
      if (const StageBlocks here = stage_blocks(m, c, stage); here.moe + here.dense > most.moe + most.dense)
        most = here;
    const double stage_forward = most.moe * out.layer_forward_ms + most.dense * out.dense_layer_forward_ms;
    const double stage_backward = most.moe * out.layer_backward_ms + most.dense * out.dense_layer_backward_ms;
    double hidden = 0;
    if (s.schedule.overlap_grad_reduce) hidden += std::min(out.layer_gradient_rs_ms, stage_backward);
    if (s.schedule.overlap_param_gather) {
      const double layer_gather = comm(costs, OpClass::AllGather, dp_cp_g, layers_only.dense * b) +
                                  comm(costs, OpClass::AllGather, edp_g, layers_only.expert * b);
      hidden += std::min(layer_gather, stage_forward);
    }
    out.dp_overlap_hidden_ms = hidden;
    out.optimizer_ms += hidden * (costs.overlap_compute_slowdown() - 1.0) - hidden;
  }
  // The sizes the chunk's tasks stand for (trace args): weight GEMMs, attention core and router FLOPs.
  out.layer_forward_flops = proj_flops + core_flops + moe.gating_forward_flops + moe.expert_forward_flops;
  out.layer_backward_flops = 2 * (proj_flops + core_flops + moe.gating_forward_flops) + moe.expert_backward_flops;
  out.dense_layer_forward_flops = proj_flops + core_flops + dense_ffn_flops;
  // The breakdown's stage: the one holding the most MoE blocks.
  StageBlocks n = stage_blocks(m, c, 0);
  for (std::int64_t stage = 1; stage < c.pp; ++stage)
    if (const StageBlocks here = stage_blocks(m, c, stage); here.moe > n.moe) n = here;
  out.busiest_moe_stage = n;
  // MFU: model FLOPs (3 x forward, causal attention, LM head) per iteration over peak.
  const double tokens = as_double(s.workload.global_batch_size) * seq;
  out.model_flops = 3.0 * tokens * model::forward_flops_per_token(m, s.workload.seq_len);
  // The peak of the GEMMs' datatype: fp32 for 4-byte elements, else BF16 (FP16
  // where the GPU has no BF16); under an FP8 recipe the FP8 peak, which bounds
  // every part of the run (the BF16 parts run below it), so MFU stays below 1.
  const double half_peak = s.cluster.gpu.peak_flops_per_s_bf16 > 0 ? s.cluster.gpu.peak_flops_per_s_bf16
                                                                   : s.cluster.gpu.peak_flops_per_s_fp16;
  out.peak_flops_per_s = fp8                 ? s.cluster.gpu.peak_flops_per_s_fp8
                         : m.dtype_bytes == 4 ? s.cluster.gpu.peak_flops_per_s_fp32
                                              : half_peak;
  out.world = world;
  out.memory_bytes_per_gpu = memory_per_gpu(m, s.workload, MemorySettings::of(s), c);
  out.fits = fits_in_memory(s.cluster.gpu, out.memory_bytes_per_gpu, mem);
  return out;
}

}  // namespace moeplan::cost
