#include <moeplan/plan/mapping_run.hpp>

#include <algorithm>
#include <optional>

#include <moeplan/core/error.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/pipeline_times.hpp>
#include <moeplan/plan/plausibility.hpp>
#include <moeplan/sched/pipeline.hpp>
#include <moeplan/sim/analysis.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::plan {
namespace {


}  // namespace

MappingResult run_pipeline(const cost::LayerPrices& l, const cost::CostModel& costs, const model::RunLimits& limits,
                           const StageOverlap* overlap, MappingTrace* trace) {
  const cost::MappingConfig& c = l.config;
  MappingResult out;
  out.config = c;
  const std::int64_t num_layers = static_cast<std::int64_t>(l.moe_block.size());
  const double layers_per_chunk = l.layers_per_chunk();
  const StageOverlap none;
  const StageOverlap& saved = overlap != nullptr ? *overlap : none;
  sched::PipelineSpec pipe;
  pipe.stages = c.pp;
  pipe.virtual_stages = c.vpp;
  pipe.micro_batches = l.micro_batches;
  pipe.chunk = {layers_per_chunk * l.layer_forward_ms - saved.chunk_forward_saved_ms,
                layers_per_chunk * l.layer_backward_ms - saved.chunk_backward_saved_ms, c.pp > 1 ? l.p2p_ms : 0.0};
  MOEPLAN_CHECK(pipe.chunk.forward_ms >= 0 && pipe.chunk.backward_ms >= 0 && saved.optimizer_saved_ms <= l.optimizer_ms,
                "an overlap hides no more than a stage's work");
  // The sizes the chunk's tasks stand for (trace args): weight GEMMs, attention core and router FLOPs; the
  // P2P activation; the optimizer step's gradient and parameter bytes.
  pipe.chunk.forward_flops = layers_per_chunk * l.layer_forward_flops;
  pipe.chunk.backward_flops = layers_per_chunk * l.layer_backward_flops;
  pipe.chunk.p2p_bytes = l.p2p_bytes;
  {
    // Each virtual stage sums its own blocks (dense blocks and a pipeline
    // layout's uneven stages make chunks differ), and the first and last hold
    // the model's ends: the embedding, and the final norm, LM head and loss
    // (Megatron-Core's pre_process and post_process stages). An overlap's saving (the joint search)
    // was priced for chunks of MoE blocks: each MoE block keeps its share of
    // it, dense blocks have nothing to overlap.
    MOEPLAN_CHECK(static_cast<std::int64_t>(l.chunk_layers.size()) == c.pp * c.vpp, "a block count per chunk");
    const double forward_saved = saved.chunk_forward_saved_ms / layers_per_chunk;
    const double backward_saved = saved.chunk_backward_saved_ms / layers_per_chunk;
    pipe.chunks.assign(static_cast<std::size_t>(c.pp * c.vpp), sched::PipelineChunkCost{});
    std::int64_t first = 0;
    for (std::int64_t v = 0; v < c.pp * c.vpp; ++v) {
      sched::PipelineChunkCost& cc = pipe.chunks[static_cast<std::size_t>(v)];
      cc.p2p_ms = pipe.chunk.p2p_ms;
      cc.p2p_bytes = pipe.chunk.p2p_bytes;
      const std::int64_t count = l.chunk_layers[static_cast<std::size_t>(v)];
      for (std::int64_t i = first; i < first + count; ++i) {
        const bool moe_block = l.moe_block[static_cast<std::size_t>(i)];
        cc.forward_ms += moe_block ? l.layer_forward_ms - forward_saved : l.dense_layer_forward_ms;
        cc.backward_ms += moe_block ? l.layer_backward_ms - backward_saved : l.dense_layer_backward_ms;
        cc.forward_flops += moe_block ? l.layer_forward_flops : l.dense_layer_forward_flops;
        cc.backward_flops += moe_block ? l.layer_backward_flops : 2 * l.dense_layer_forward_flops;
      }
      first += count;
    }
    sched::PipelineChunkCost& head = pipe.chunks.front();
    head.forward_ms += l.ends.first_forward_ms;
    head.backward_ms += l.ends.first_backward_ms;
    sched::PipelineChunkCost& tail = pipe.chunks.back();
    tail.forward_ms += l.ends.last_forward_ms + l.mtp_forward_ms;
    tail.backward_ms += l.ends.last_backward_ms + l.mtp_backward_ms;
    tail.forward_flops += l.ends.head_forward_flops;
    tail.backward_flops += 2 * l.ends.head_forward_flops;
  }
  pipe.optimizer_ms = l.optimizer_ms - saved.optimizer_saved_ms;
  pipe.optimizer_bytes = l.optimizer_bytes;
  pipe.limits = limits;
  // The engine's run, or (no trace asked for, every task at its duration) the
  // same times without the graph, extrapolated over the steady periods when
  // a shorter run repeats exactly: pipeline_times.hpp.
  std::optional<PipelineTimes> times;
  out.pipeline.micro_batches = pipe.micro_batches;
  out.pipeline.simulated_micro_batches = pipe.micro_batches;
  const bool fixed_rate = costs.overlap_compute_slowdown() == 1.0 && costs.overlap_comm_slowdown() == 1.0;
  if (trace == nullptr && fixed_rate)
    if (const std::optional<SteadyPipelineTimes> steady = steady_pipeline_times(pipe)) {
      times = steady->times;
      out.pipeline.simulated_micro_batches = steady->simulated_micro_batches;
      out.pipeline.extrapolated = steady->extrapolated;
    }
  std::optional<sched::BuiltSchedule> built;
  std::optional<sim::Timeline> tl;
  if (!times) {
    built = sched::build_pipeline(pipe);
    built->overlap_compute_slowdown = costs.overlap_compute_slowdown();
    built->overlap_comm_slowdown = costs.overlap_comm_slowdown();
    tl = run_schedule(*built);
    const sim::Summary summary = sim::summarize(built->graph, *tl);
    times = PipelineTimes{tl->makespan_ms, summary.ranks.empty() ? 0.0 : summary.ranks.front().compute_busy_ms};
  }
  // Stage 0 runs the last backward, so the iteration ends with its optimizer step.
  out.iteration_ms = times->makespan_ms;
  // Breakdown for the stage: per micro-batch costs times micro-batches and
  // layers per stage; with dense blocks, for the stage holding the most MoE blocks.
  const cost::StageBlocks& n = l.busiest_moe_stage;
  const double per_stage = as_double(l.micro_batches) * n.moe;
  const double per_stage_dense = as_double(l.micro_batches) * n.dense;
  // Each part holds the FP8 casts in front of its GEMMs (none under bf16).
  out.breakdown.attention_ms = (per_stage + per_stage_dense) *
                               (3 * l.attention_ms + l.attention_cast_forward_ms + l.attention_cast_backward_ms);
  out.breakdown.moe_compute_ms =
      per_stage * (3 * l.router_ms + l.experts_forward_ms + l.experts_backward_ms + l.experts_cast_forward_ms +
                   l.experts_cast_backward_ms) +
      per_stage_dense *
          (l.dense_ffn_ms + l.dense_ffn_backward_ms + l.dense_ffn_cast_forward_ms + l.dense_ffn_cast_backward_ms);
  out.breakdown.a2a_ms = per_stage * (2 * l.a2a_ms - l.a2a_hidden_ms);
  const double cp_ms = l.cp_exposed_ms + l.cp_exposed_backward_ms;
  out.breakdown.agrs_ms = per_stage * (2 * (l.tp_comm_ms + l.etp_comm_ms) + cp_ms) +
                          per_stage_dense * (4 * l.tp_comm_ms + cp_ms);
  // The optimizer step, and under Megatron-FSDP each block's exposed gathers and reduce-scatter.
  out.breakdown.dp_ms = l.optimizer_ms + per_stage * l.fsdp_exposed_ms + per_stage_dense * l.dense_fsdp_exposed_ms;
  out.breakdown.recompute_ms = per_stage * l.recompute_ms + per_stage_dense * l.dense_recompute_ms;
  // The memory-bound kernels inside the blocks join their parts: the norms,
  // residual adds and rotary the attention's, the router, permutation and
  // activations the FFN's.
  out.breakdown.attention_ms +=
      (per_stage + per_stage_dense) * (l.block_memory_forward_ms + l.block_memory_backward_ms);
  out.breakdown.moe_compute_ms += per_stage * (l.moe_memory_forward_ms + l.moe_memory_backward_ms) +
                                  per_stage_dense * (l.dense_memory_forward_ms + l.dense_memory_backward_ms);
  out.breakdown.host_wait_ms = per_stage * l.host_wait_ms;
  out.breakdown.model_ends_ms =
      as_double(l.micro_batches) * (l.ends.first_forward_ms + l.ends.first_backward_ms + l.ends.last_forward_ms +
                                    l.ends.last_backward_ms + l.mtp_forward_ms + l.mtp_backward_ms);
  // Stage 0's idle time (summarize's bubble: makespan less compute busy), less
  // its optimizer step (counted in dp_ms).
  out.breakdown.pp_bubble_ms = std::max(0.0, (times->makespan_ms - times->stage0_compute_busy_ms) - pipe.optimizer_ms);
  out.stage.layers_per_chunk = num_layers / (c.pp * c.vpp);
  out.stage.layers_per_stage = num_layers / c.pp;
  out.stage.micro_batches = l.micro_batches;
  out.stage.chunk_forward_ms = pipe.chunk.forward_ms;
  out.stage.chunk_backward_ms = pipe.chunk.backward_ms;
  out.stage.layer_forward_comm_ms = l.layer_comm_ms;
  out.stage.layer_backward_comm_ms = l.layer_comm_ms;
  out.stage.optimizer_ms = pipe.optimizer_ms;
  out.stage.layer_gradient_rs_ms = l.layer_gradient_rs_ms;
  // Every stage's optimizer step lasts as long, so the iteration is the last backward's end plus one.
  out.stage.pipeline_ms = out.iteration_ms - pipe.optimizer_ms;
  out.mfu = l.model_flops / (out.iteration_ms / 1e3 * as_double(l.world) * l.peak_flops_per_s);
  out.memory_bytes_per_gpu = l.memory_bytes_per_gpu;
  out.fits = l.fits;
  if (trace != nullptr) *trace = MappingTrace{std::move(*built), std::move(*tl)};
  check_plausible(out);
  return out;
}

MappingResult price_mapping(const model::ScenarioSpec& s, const cost::CostModel& costs, const cost::MappingConfig& c,
                            MappingTrace* trace, const StageOverlap* overlap) {
  return run_pipeline(cost::price_layers(s, costs, c), costs, s.limits, overlap, trace);
}

}  // namespace moeplan::plan
