#pragma once
// MoE Parallel Folding (shared/papers/moe-parallel-folding.md) as a capacity
// planner: for a model, a cluster and a batch, every valid 5D mapping
// (tp, cp, pp, vpp, ep, etp, micro-batch) is priced (layer costs under the
// mapping, pipeline on the engine, distributed-optimizer collectives over
// dp x cp for dense parameters and edp for experts), its memory per GPU
// checked against the GPU, and ranked by iteration time.
// Two modes: `coupled` (before folding, Megatron v0.9: etp = tp and ep divides
// dp x cp) and `folded` (any valid expert mapping).

#include <cstdint>
#include <string>
#include <vector>

#include <moeplan/core/progress.hpp>
#include <moeplan/core/parallel.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/sched/schedule.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::plan {

/// @brief One 5D mapping and its micro-batch size.
struct FoldingConfig {
  std::int64_t tp = 1, cp = 1, pp = 1, vpp = 1, ep = 1, etp = 1, micro_batch = 1;
  std::int64_t dp = 1, edp = 1;  ///< derived

  /// As a scenario's parallelism (sequence parallel, as Megatron requires with MoE and TP).
  model::ParallelSpec parallel_spec() const;
  /// From a scenario's parallelism and micro-batch size.
  static FoldingConfig from(const model::ParallelSpec& parallel, std::int64_t micro_batch);
};

/// @brief Where one iteration's time goes, per GPU of the slowest stage (ms).
struct FoldingBreakdown {
  double attention_ms = 0;    ///< attention compute (incl. projections), all micro-batches
  double moe_compute_ms = 0;  ///< router, experts, shared experts
  double a2a_ms = 0;          ///< EP AlltoAll dispatch and combine
  double agrs_ms = 0;         ///< TP/SP and ETP AllGather / ReduceScatter, CP exchange not hidden
  double dp_ms = 0;           ///< distributed optimizer: gradient RS + parameter AG over dp x cp and edp
  double pp_bubble_ms = 0;    ///< pipeline idle time of the stage
};

/// @brief One pipeline stage as priced (ms): the work an overlap schedule can
/// shorten (docs/cost-model.md, "Joint search: mapping x overlap").
struct FoldingStage {
  std::int64_t layers_per_chunk = 0;
  std::int64_t layers_per_stage = 0;
  std::int64_t micro_batches = 0;  ///< per DP rank per iteration
  double chunk_forward_ms = 0;     ///< one chunk of one micro-batch, as the pipeline ran it
  double chunk_backward_ms = 0;
  /// Per layer and micro-batch: the communication priced in the layer (A2A,
  /// TP/SP and ETP collectives, CP exchange not hidden), forward and backward.
  double layer_forward_comm_ms = 0;
  double layer_backward_comm_ms = 0;
  double optimizer_ms = 0;          ///< the distributed optimizer's step, as run
  double layer_gradient_rs_ms = 0;  ///< its gradient reduce-scatter of the layers' parameters (not the ends')
  double pipeline_ms = 0;           ///< the iteration less the optimizer step: the last backward's end
};

/// @brief What an overlap schedule takes off a stage's priced work (ms): the
/// joint search's input to price_mapping. Zero: the folding search's pricing.
struct StageOverlap {
  double chunk_forward_saved_ms = 0;
  double chunk_backward_saved_ms = 0;
  double optimizer_saved_ms = 0;
};

/// @brief A priced mapping.
struct FoldingResult {
  FoldingConfig config;
  double iteration_ms = 0;
  double mfu = 0;
  double memory_bytes_per_gpu = 0;
  bool fits = false;
  FoldingBreakdown breakdown;
  FoldingStage stage;
};

/// @brief Memory assumptions (docs/cost-model.md, "Memory"); recomputation comes from the scenario.
struct MemoryModel {
  double reserve_fraction = 0.1;  ///< CUDA context, NCCL buffers, fragmentation
};

/// @brief The pipeline a priced mapping ran on the engine (stages as ranks, each
/// stage's optimizer step at the end), for traces and pictures.
struct FoldingTrace {
  sched::BuiltSchedule built;
  sim::Timeline timeline;
};

/// Prices one configuration (throws an input Error if it is not valid for the
/// scenario); fills `trace` when given. `overlap`, when given, shortens each
/// chunk and the optimizer step by what an overlap schedule hides (the joint
/// search); the breakdown stays the unhidden one, `stage` has the shortened times.
FoldingResult price_mapping(const model::ScenarioSpec& scenario, const cost::CostModel& costs, const FoldingConfig& c,
                            const MemoryModel& memory = {}, FoldingTrace* trace = nullptr,
                            const StageOverlap* overlap = nullptr);

/// Every valid configuration of a mode ("coupled" or "folded"), priced, those that
/// fit first by iteration time (ties: smaller tp, cp, pp, ep, etp), then the rest.
/// `started`, when given, records how many threads the search could start.
std::vector<FoldingResult> search_mappings(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                                           const std::string& mode, unsigned threads = 2,
                                           ThreadsStarted* started = nullptr, Progress* progress = nullptr);

/// @brief Parameters one GPU of the largest pipeline stage holds, by the group that reduces their gradients.
struct HeldParams {
  double dense = 0;   ///< attention, norms, router, shared experts, embeddings: over dp x cp
  double expert = 0;  ///< routed experts: over edp
};

/// Parameters one GPU holds: its layers, plus the embedding (first stage) or LM
/// head and final norm (last stage), both when pp = 1.
HeldParams held_params(const model::ModelSpec& model, const FoldingConfig& c);

/// The part of held_params that the stage's layers hold (no embedding, LM head or final norm).
HeldParams held_params_of_layers(const model::ModelSpec& model, const FoldingConfig& c);

/// held_params(model, c).dense + .expert.
double params_per_gpu(const model::ModelSpec& model, const FoldingConfig& c);

/// Bytes one GPU of the first pipeline stage holds for mapping c: weights,
/// gradients, the distributed optimizer's shard and activations
/// (docs/cost-model.md, "Memory"). The same model for every family: a plan
/// of any family is checked against the GPU's memory with it.
double memory_per_gpu(const model::ScenarioSpec& scenario, const FoldingConfig& c);

/// Whether `bytes` fit in the scenario's GPU less the model's reserve.
bool fits_in_memory(const model::ScenarioSpec& scenario, double bytes, const MemoryModel& memory = {});

}  // namespace moeplan::plan
