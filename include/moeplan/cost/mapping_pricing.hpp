#pragma once
// A mapping's layers priced once (docs/cost-model.md, "MoE Parallel
// Folding"): per micro-batch and GPU, the attention, MoE and dense blocks of
// Megatron-Core under TP + SP, CP, EP and ETP, the stage-to-stage transfer,
// the distributed optimizer's collectives, the memory per GPU and what MFU
// divides by. Every pipeline run of the mapping (with or without an overlap
// schedule, plan::run_pipeline) reuses these prices: they do not depend on
// what an overlap hides.

#include <cstdint>
#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/mapping.hpp>
#include <moeplan/cost/memory.hpp>
#include <moeplan/cost/model_ends.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief One mapping's prices (ms, FLOPs, bytes), what its pipeline is built from.
struct LayerPrices {
  MappingConfig config;            ///< dp and edp filled in from the world size
  model::Precision precision = model::Precision::Bf16;  ///< the scenario's workload.precision, as priced
  model::RecomputeSpec recompute;                       ///< the scenario's schedule.recompute, as priced
  std::int64_t micro_batches = 0;  ///< per DP rank per iteration
  /// The blocks of the model, true where MoE (ModelSpec::moe_layer), for the
  /// chunks of a model with dense blocks.
  std::vector<bool> moe_block;
  bool dense_blocks = false;  ///< some block has a dense FFN
  /// Blocks of each virtual stage in model order (chunk_layer_counts): even
  /// unless the mapping has a pipeline layout.
  std::vector<std::int64_t> chunk_layers;

  // Per MoE block and micro-batch, one direction (forward unless named).
  double attention_ms = 0;         ///< projections and core, forward
  double tp_comm_ms = 0;           ///< TP/SP AllGather + ReduceScatter of one layer
  double cp_exposed_ms = 0;        ///< CP exchange not hidden under the attention core, forward
  double cp_exposed_backward_ms = 0;  ///< and backward (cost/context_parallel.hpp)
  double router_ms = 0;            ///< the gate, forward
  double experts_forward_ms = 0;   ///< routed (and shared) experts
  double experts_backward_ms = 0;
  double a2a_ms = 0;               ///< EP dispatch + combine
  double etp_comm_ms = 0;          ///< ETP AllGather + ReduceScatter
  /// Of the forward and backward a2a_ms, what Megatron's 1F1B A2A overlap
  /// (schedule.a2a_overlap) hid, on average per micro-batch; the layer times
  /// are net of it (less the compute slowdown beside it).
  double a2a_hidden_ms = 0;
  double dense_ffn_ms = 0;         ///< a dense block's FFN, forward (0 without dense blocks)
  double dense_ffn_backward_ms = 0;  ///< and backward (twice the forward without a GEMM shape model)
  /// FP8 casts (workload.precision; 0 under bf16) in front of the attention
  /// block's linear layers, an MoE block's experts and a dense block's FFN:
  /// inputs and 1 / micro_batches of the weights forward, gradients backward.
  double attention_cast_forward_ms = 0;
  double attention_cast_backward_ms = 0;
  double experts_cast_forward_ms = 0;
  double experts_cast_backward_ms = 0;
  double dense_ffn_cast_forward_ms = 0;
  double dense_ffn_cast_backward_ms = 0;
  /// Memory-bound kernels (memory_bound_kernels.hpp) on the elementwise line,
  /// included in the block times: every block's norms, residual adds and
  /// rotary embedding; an MoE block's router softmax, permutation and expert
  /// activations; a dense block's MLP activation.
  double block_memory_forward_ms = 0;
  double block_memory_backward_ms = 0;
  double moe_memory_forward_ms = 0;
  double moe_memory_backward_ms = 0;
  double dense_memory_forward_ms = 0;
  double dense_memory_backward_ms = 0;
  /// The model's ends per micro-batch (model_ends.hpp): the embedding on the
  /// first virtual stage, final norm, LM head and loss on the last.
  EndTimes ends;
  /// Multi-token prediction modules (model.mtp_num_layers), per micro-batch,
  /// on the last virtual stage: each a block, its projection and norms, the
  /// next tokens' embedding and a loss through the LM head.
  double mtp_forward_ms = 0;
  double mtp_backward_ms = 0;
  /// Recomputation (schedule.recompute): the forward work an MoE block and a
  /// dense block rerun in their backward pass, included in the backward times.
  double recompute_ms = 0;
  double dense_recompute_ms = 0;
  /// What the GPU waits for the host to issue an MoE block's forward pass
  /// (cost/host_issue.hpp: a dispatcher that waits on the host, the profile's
  /// host_issue); included in layer_forward_ms (and in recompute_ms where the
  /// recomputation reruns the dispatch). 0 when the host keeps ahead.
  double host_wait_ms = 0;
  double layer_forward_ms = 0;     ///< a whole MoE block
  double layer_backward_ms = 0;
  double dense_layer_forward_ms = 0;  ///< a whole dense block
  double dense_layer_backward_ms = 0;
  /// The communication priced in one MoE block (A2A, TP/SP and ETP
  /// collectives, CP exchange not hidden), per direction: what an overlap can hide.
  double layer_comm_ms = 0;
  double layer_forward_flops = 0;  ///< weight GEMMs, attention core and router
  double layer_backward_flops = 0;
  double dense_layer_forward_flops = 0;

  double p2p_ms = 0;     ///< one stage-to-stage activation transfer (0 with pp = 1)
  double p2p_bytes = 0;
  /// The distributed optimizer's step: gradient ReduceScatter and parameter
  /// AllGather over dp x cp (dense) and edp (experts), and the Adam update of
  /// the rank's shard on the elementwise line, for the stage holding the most.
  double optimizer_ms = 0;
  double optimizer_update_ms = 0;  ///< of which the Adam update of the shard and the gradient buffer passes
  double gradient_buffer_ms = 0;   ///< of which Megatron-Core DDP's zeroing, NaN check and pre-scaling
  double optimizer_bytes = 0;       ///< gradient and parameter bytes it moves
  double layer_gradient_rs_ms = 0;  ///< its gradient ReduceScatter of the layers' parameters (not the ends')
  /// Of the step, what Megatron's --overlap-grad-reduce / --overlap-param-gather
  /// (schedule.overlap_*) hid behind the stage's passes; optimizer_ms is what
  /// stayed exposed, plus the compute slowdown of the overlap.
  double dp_overlap_hidden_ms = 0;
  /// Megatron-FSDP (schedule.data_parallel_sharding_strategy optim_grads_params,
  /// docs/cost-model.md "FSDP"), per block and micro-batch, forward and
  /// backward together: what its parameter AllGathers and gradient
  /// ReduceScatter leave exposed behind the block's compute, plus the compute
  /// slowdown beside what they hide (included in the block times above; 0
  /// without it). The optimizer step then keeps the ends' collectives only.
  double fsdp_exposed_ms = 0;        ///< an MoE block
  double dense_fsdp_exposed_ms = 0;  ///< a dense block
  double fsdp_hidden_ms = 0;         ///< an MoE block's collectives hidden behind its compute

  StageBlocks busiest_moe_stage;  ///< the stage holding the most MoE blocks (the breakdown's)
  double memory_bytes_per_gpu = 0;
  bool fits = false;
  /// MFU's numerator and denominator's parts: model FLOPs per iteration
  /// (3 x forward, causal attention, LM head), GPUs, the peak of the model's datatype.
  double model_flops = 0;
  std::int64_t world = 0;
  double peak_flops_per_s = 0;

  double layers_per_chunk() const;
};

/// Prices mapping `c` of the scenario (throws an input Error, naming the
/// field, if it is not valid for the scenario: divisibility of layers, heads,
/// sequence and batch, Megatron's rank-group rules).
LayerPrices price_layers(const model::ScenarioSpec& scenario, const CostModel& costs, const MappingConfig& c,
                         const MemoryModel& memory = {});

/// How many times price_layers has run in this process, on every thread: what
/// a test counts to check that a search prices each distinct mapping once.
std::uint64_t layer_pricings();

}  // namespace moeplan::cost
