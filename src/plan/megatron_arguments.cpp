#include <moeplan/plan/megatron_arguments.hpp>

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <moeplan/model/cuda_graphs.hpp>
#include <moeplan/model/pipeline_layout.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/plan/open_knobs.hpp>

namespace moeplan::plan {

std::string megatron_arguments(const PlanResult& r, const model::ScenarioSpec& given) {
  // The scenario as the plan chose it (the precision and recomputation schedule.search opened).
  const model::ScenarioSpec scenario = with_knob_choices(given, r.chosen.knobs);
  const model::ParallelSpec& p = *r.chosen.knobs.parallelism;
  // Megatron-LM's training arguments (megatron/training/arguments.py); the
  // mapping's data-parallel sizes (dp, edp) follow from the world size.
  std::string out = fmt::format(
      "--tensor-model-parallel-size {} --pipeline-model-parallel-size {} --context-parallel-size {} "
      "--expert-model-parallel-size {} --expert-tensor-parallel-size {}",
      p.tp, p.pp, p.cp, p.ep, p.etp);
  // An uneven split is Megatron's layout (which also sets the virtual stages);
  // else the even one. Megatron wants the model's MTP blocks in a layout
  // (their count must be mtp_num_layers): on the last stage, where the plan priced them.
  if (!p.stage_layers.empty())
    out += fmt::format(" --pipeline-model-parallel-layout \"{}\"",
                       model::pipeline_layout_text(p.stage_layers, scenario.model.mtp_num_layers));
  else if (p.vpp > 1)
    out += fmt::format(" --num-layers-per-virtual-pipeline-stage {}", scenario.model.num_layers / (p.pp * p.vpp));
  if (p.sequence_parallel) out += " --sequence-parallel";
  out += fmt::format(" --micro-batch-size {} --global-batch-size {} --seq-length {}",
                     r.chosen.knobs.micro_batch_size.value_or(scenario.workload.micro_batch_size),
                     scenario.workload.global_batch_size, scenario.workload.seq_len);
  // What the cost model assumed (docs/cost-model.md, "MoE Parallel Folding").
  out += " --use-distributed-optimizer";
  // The token dispatcher priced (docs/cost-model.md, "DeepEP dispatcher"):
  // Megatron-LM's flex dispatcher on the DeepEP backend is
  // --moe-flex-dispatcher-backend deepep since NVIDIA/Megatron-LM@3df200905e,
  // which deprecated --moe-enable-deepep (transformer_config.py warns on it).
  // HybridEP is the same flag's other backend (transformer_config.py
  // moe_flex_dispatcher_backend: "deepep" or "hybridep").
  out += scenario.schedule.deduplicating_dispatcher()
             ? " --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend " + scenario.schedule.moe_dispatcher
             : " --moe-token-dispatcher-type alltoall";
  // FP8 (megatron/training/arguments.py --fp8-format, --fp8-recipe): E4M3
  // forward, E5M2 gradients ("hybrid"), Transformer Engine's recipe by name.
  switch (scenario.workload.precision) {
    case model::Precision::Bf16:
      if (scenario.model.dtype_bytes == 2) out += " --bf16";
      break;
    case model::Precision::Fp8Delayed:
      out += " --bf16 --fp8-format hybrid --fp8-recipe delayed";
      break;
    case model::Precision::Fp8Tensorwise:
      out += " --bf16 --fp8-format hybrid --fp8-recipe tensorwise";
      break;
    case model::Precision::Fp8Blockwise:
      out += " --bf16 --fp8-format e4m3 --fp8-recipe blockwise";
      break;
    case model::Precision::Mxfp8:
      out += " --bf16 --fp8-format e4m3 --fp8-recipe mxfp8";
      break;
  }
  if (scenario.schedule.a2a_overlap) out += " --overlap-moe-expert-parallel-comm";
  // Token drop as priced: each expert padded to its capacity (static shapes;
  // Megatron-LM's --moe-expert-capacity-factor, --moe-pad-expert-input-to-capacity).
  if (!scenario.model.is_dense() && scenario.model.moe.capacity_factor)
    out += fmt::format(" --moe-expert-capacity-factor {} --moe-pad-expert-input-to-capacity",
                       *scenario.model.moe.capacity_factor);
  // CUDA graphs (Megatron-LM's --cuda-graph-impl, --cuda-graph-modules;
  // transformer_config.py: full_iteration takes no modules).
  const model::CudaGraphs& graphs = scenario.schedule.cuda_graphs;
  if (graphs.full_iteration) {
    out += " --cuda-graph-impl full_iteration";
  } else if (graphs.any()) {
    std::string modules = model::cuda_graphs_text(graphs);  // "attn+moe_router": one argument per module
    std::replace(modules.begin(), modules.end(), '+', ' ');
    out += " --cuda-graph-impl transformer_engine --cuda-graph-modules " + modules;
  }
  // Megatron-LM's arguments.py: --cross-entropy-loss-fusion, --cross-entropy-fusion-impl {native,te}.
  if (scenario.schedule.fused_cross_entropy())
    out += " --cross-entropy-loss-fusion --cross-entropy-fusion-impl te";
  if (scenario.schedule.grad_reduce_in_bf16) out += " --grad-reduce-in-bf16";
  if (!scenario.schedule.check_for_nan_in_grad) out += " --no-check-for-nan-in-loss-and-grad";
  if (scenario.schedule.average_in_collective) out += " --ddp-average-in-collective";
  // Megatron-LM's arguments.py: --use-precision-aware-optimizer, --exp-avg-dtype, --exp-avg-sq-dtype
  // (store_param_remainders is on by default).
  // Megatron-LM takes --exp-avg-dtype only with the precision-aware optimizer,
  // which under Megatron-FSDP keeps no master of its own (preserve_fp32_weights
  // False; Megatron-FSDP holds the main params): bf16 moments without master
  // weights write it too.
  const bool bf16_moments = scenario.schedule.optimizer_moments_dtype == "bf16";
  if (scenario.schedule.precision_aware_optimizer || (bf16_moments && !model::keeps_master_weights(scenario.schedule)))
    out += " --use-precision-aware-optimizer";
  if (bf16_moments) out += " --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16";
  // Megatron-Core's op fuser with the GLU halves interleaved in blocks of 32,
  // as Megatron-Bridge's performance scripts set it for the CuTe DSL kernels
  // (scripts/performance/utils/overrides.py); the kernels also need the
  // environment variable NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 (docs/cost-model.md).
  if (scenario.schedule.fused_grouped_mlp)
    out += " --use-transformer-engine-op-fuser --moe-mlp-glu-interleave-size 32";
  const bool fsdp = model::fully_sharded(scenario.schedule);
  // Megatron-FSDP (the Megatron-FSDP user guide's required flags: it needs
  // --use-distributed-optimizer, written above, no gradient-accumulation
  // fusion and its own checkpoint format); the plan priced its gathers and
  // reduce-scatters overlapped with the blocks' compute, which Megatron-FSDP
  // does under --overlap-grad-reduce and --overlap-param-gather.
  if (fsdp)
    out += " --use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params "
           "--no-gradient-accumulation-fusion --ckpt-format fsdp_dtensor";
  if (fsdp || scenario.schedule.overlap_grad_reduce) out += " --overlap-grad-reduce";
  if (fsdp || scenario.schedule.overlap_param_gather) out += " --overlap-param-gather";
  // Without master weights (Megatron-LM docs/user-guide/features/megatron_fsdp.md,
  // "Mixed-Precision"): main params and main grads "auto" (the model's bf16),
  // the gradients reduced as priced (fp32 unless grad_reduce_in_bf16).
  if (!model::keeps_master_weights(scenario.schedule))
    out += fmt::format(" --megatron-fsdp-main-params-dtype auto --megatron-fsdp-main-grads-dtype auto "
                       "--megatron-fsdp-grad-comm-dtype {}",
                       scenario.schedule.grad_reduce_in_bf16 ? "bf16" : "fp32");
  const model::RecomputeSpec& recompute = scenario.schedule.recompute;
  if (recompute.granularity == "selective")
    out += fmt::format(" --recompute-granularity selective --recompute-modules {}",
                       fmt::join(model::recomputed_modules(recompute), " "));
  if (scenario.schedule.attention_backend == "unfused") out += " --attention-backend unfused";
  if (recompute.granularity == "full")
    out += fmt::format(" --recompute-granularity full --recompute-method {} --recompute-num-layers {}", recompute.method,
                       recompute.num_layers);
  const model::ParallelSpec& sp = scenario.parallel;
  if (p.cp > 1 && sp.cp_comm_type != "p2p") out += fmt::format(" --cp-comm-type {}", sp.cp_comm_type);
  if (p.cp > 1 && !sp.hierarchical_cp_sizes.empty())
    out += fmt::format(" --hierarchical-context-parallel-sizes {}", fmt::join(sp.hierarchical_cp_sizes, " "));
  out += '\n';
  const std::string step =
      fsdp ? "Megatron-FSDP's AllGather of each block's parameters before its forward and backward pass and "
             "ReduceScatter of its gradients after its backward pass, every micro-batch, behind the neighbouring "
             "block's compute, and the embedding's and LM head's step after the pipeline drains"
           : fmt::format("the distributed optimizer's gradient ReduceScatter {} and its parameter AllGather {}",
                         scenario.schedule.overlap_grad_reduce ? "behind the last backward pass"
                                                               : "after the pipeline drains",
                         scenario.schedule.overlap_param_gather ? "behind the next first forward pass" : "after it");
  out += fmt::format(
      "# assumed by the plan: rank order {} (Megatron-Core's default is tp-cp-ep-dp-pp); {}; the context-parallel "
      "exchange ({}) exposed where the attention core does not hide it; dp {} edp {}; {} ms per iteration, MFU "
      "{:.1f}%\n",
      p.order, step, sp.cp_comm_type, p.dp, p.edp, r.chosen.iteration_ms, 100 * r.chosen.mfu.value_or(0));
  return out;
}

}  // namespace moeplan::plan
