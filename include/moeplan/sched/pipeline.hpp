#pragma once
// Pipeline-parallel schedules on the engine (Megatron-Core's 1F1B and
// interleaved 1F1B): pipeline stages as ranks, one compute stream each, and
// the activation (forward) or gradient (backward) of each micro-batch sent to
// the neighbouring stage over a P2P stream. Bubbles come out of the run.

#include <cstdint>
#include <vector>

#include <moeplan/sched/schedule.hpp>

namespace moeplan::sched {

/// @brief Durations of one model chunk (layers / (pp x vpp)) for one micro-batch.
struct PipelineChunkCost {
  double forward_ms = 0;
  double backward_ms = 0;
  double p2p_ms = 0;  ///< activation (or its gradient) to the next (previous) stage
  /// What the durations price, for traces (the tasks' size): FLOPs of the
  /// chunk's forward and backward on one GPU, bytes of one P2P message.
  double forward_flops = 0;
  double backward_flops = 0;
  double p2p_bytes = 0;
};

/// @brief A pipeline to simulate.
struct PipelineSpec {
  std::int64_t stages = 1;          ///< pp
  std::int64_t virtual_stages = 1;  ///< vpp (chunks per stage); > 1: interleaved 1F1B
  std::int64_t micro_batches = 1;   ///< per iteration per DP rank
  PipelineChunkCost chunk;
  /// When blocks differ (dense and MoE): one cost per virtual stage c x stages
  /// + r, the chunk c of stage r; empty: every chunk costs `chunk`.
  std::vector<PipelineChunkCost> chunks;
  /// Each stage's optimizer step after its last task (gradient ReduceScatter and
  /// parameter AllGather of the distributed optimizer), on its own stream; 0: none.
  double optimizer_ms = 0;
  double optimizer_bytes = 0;  ///< bytes the optimizer step's collectives move per GPU (its task's size)
  model::RunLimits limits;     ///< the graph's memory bound (the scenario's)
};

/// The order of one stage's work items: (+chunk, micro-batch) forward or
/// (-chunk-1, micro-batch) backward, as Megatron-Core issues them
/// (schedules.py: warm-up forwards, 1F1B steady state, cool-down backwards).
struct PipelineStep {
  bool forward;
  std::int64_t chunk;
  std::int64_t micro_batch;
};
std::vector<PipelineStep> pipeline_order(std::int64_t stages, std::int64_t virtual_stages, std::int64_t micro_batches,
                                         std::int64_t stage);

/// Forward steps `stage` runs before its first backward in Megatron's order:
/// pp - stage - 1 (1F1B), 2 (pp - stage - 1) + (vpp - 1) pp (interleaved), at
/// most every forward.
std::int64_t pipeline_warmup(std::int64_t stages, std::int64_t virtual_stages, std::int64_t micro_batches,
                             std::int64_t stage);

/// @brief pipeline_order of one stage, one step at a time without the vector
/// (the planners walk millions of steps): step(i) is pipeline_order(...)[i].
class PipelineOrder {
 public:
  PipelineOrder(std::int64_t stages, std::int64_t virtual_stages, std::int64_t micro_batches, std::int64_t stage);
  std::int64_t size() const { return 2 * total_; }
  PipelineStep step(std::int64_t i) const;

 private:
  std::int64_t p_, v_, total_, warmup_;
};

/// What build_pipeline refuses: sizes below 1 (input Error, parallelism.pp),
/// interleaving with micro_batches not a multiple of stages (Megatron's
/// requirement; input Error, parallelism.vpp), per-chunk costs that do not
/// name every virtual stage (internal error).
void check_pipeline(const PipelineSpec& spec);

/// The tasks build_pipeline makes: a compute task per (chunk, micro-batch,
/// direction) of each stage, a P2P send for each but the line's two ends (pp
/// > 1), an optimizer step per stage when it has one.
std::size_t pipeline_tasks(const PipelineSpec& spec);

/// Builds the DAG (check_pipeline's errors first).
BuiltSchedule build_pipeline(const PipelineSpec& spec);

}  // namespace moeplan::sched
