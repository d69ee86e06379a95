#pragma once
// A priced mapping (cost/mapping_pricing.hpp) run as a pipeline on the engine
// (Megatron-Core's 1F1B or interleaved 1F1B, stages as ranks, each stage's
// optimizer step at the end), with what an overlap schedule hides taken off
// its chunks and optimizer step when given (the joint search). The layers are
// priced once; each run reuses them.

#include <cstdint>
#include <optional>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/mapping_pricing.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/sched/schedule.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::plan {

/// @brief Where one iteration's time goes, per GPU of the slowest stage (ms).
struct MappingBreakdown {
  double attention_ms = 0;    ///< attention compute (incl. projections), all micro-batches
  double moe_compute_ms = 0;  ///< the FFN part: router, experts, shared experts; dense blocks' FFN (and their FP8 casts)
  double a2a_ms = 0;          ///< EP AlltoAll dispatch and combine
  double agrs_ms = 0;         ///< TP/SP and ETP AllGather / ReduceScatter, CP exchange not hidden
  /// distributed optimizer: gradient RS + parameter AG over dp x cp and edp
  /// (under Megatron-FSDP also each block's, as far as its compute does not hide them)
  double dp_ms = 0;
  double pp_bubble_ms = 0;    ///< pipeline idle time of the stage
  double recompute_ms = 0;    ///< forward work rerun by recomputation (schedule.recompute), all micro-batches
  /// The model's ends, all micro-batches: the embedding (first stage) and the
  /// final norm, LM head and loss (last stage), each on its own stage, and the
  /// last stage's multi-token prediction modules.
  double model_ends_ms = 0;
  /// The GPU's wait for the host to issue the MoE blocks' forward passes, all
  /// micro-batches (cost/host_issue.hpp; recomputation's in recompute_ms).
  double host_wait_ms = 0;
};

/// @brief One pipeline stage as run (ms): the work an overlap schedule can
/// shorten (docs/cost-model.md, "Joint search: mapping x overlap").
struct MappingStage {
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
/// joint search's input to run_pipeline. Zero: the mapping search's pricing.
struct StageOverlap {
  double chunk_forward_saved_ms = 0;
  double chunk_backward_saved_ms = 0;
  double optimizer_saved_ms = 0;
};

/// @brief A mapping priced and run.
/// @brief How a mapping's pipeline was run (plan::steady_pipeline_times).
struct PipelineRun {
  std::int64_t micro_batches = 0;            ///< per data-parallel rank
  std::int64_t simulated_micro_batches = 0;  ///< the steps run: all of them, or a periodic shorter run's
  bool extrapolated = false;                 ///< the rest extrapolated from that run's period
};

struct MappingResult {
  cost::MappingConfig config;
  /// Where the scenario's schedule.search opened them, the precision and the
  /// recomputation this mapping was priced with (plan/open_knobs.hpp).
  std::optional<model::Precision> chosen_precision;
  std::optional<model::RecomputeSpec> chosen_recompute;
  /// Why those (empty when none was open): the recomputation that did not
  /// fit before it, the other precisions' times.
  std::string knob_choice;
  bool recompute_for_memory = false;  ///< a lighter recomputation of this mapping did not fit
  double iteration_ms = 0;
  double mfu = 0;
  double memory_bytes_per_gpu = 0;
  bool fits = false;
  MappingBreakdown breakdown;
  MappingStage stage;
  PipelineRun pipeline;
};

/// @brief The pipeline a mapping ran on the engine, for traces and pictures.
struct MappingTrace {
  sched::BuiltSchedule built;
  sim::Timeline timeline;
};

/// Runs `layers`' pipeline on the engine (graph bound: `limits`), its chunks
/// and optimizer step shortened by `overlap` when given (the breakdown stays
/// the unhidden one, `stage` has the shortened times); fills `trace` when given.
MappingResult run_pipeline(const cost::LayerPrices& layers, const cost::CostModel& costs,
                           const model::RunLimits& limits, const StageOverlap* overlap = nullptr,
                           MappingTrace* trace = nullptr);

/// price_layers then run_pipeline: one mapping of the scenario, priced and run
/// (an input Error if it is not valid for the scenario).
MappingResult price_mapping(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                            const cost::MappingConfig& c, MappingTrace* trace = nullptr,
                            const StageOverlap* overlap = nullptr);

}  // namespace moeplan::plan
