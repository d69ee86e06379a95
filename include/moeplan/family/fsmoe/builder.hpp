#pragma once
// FSMoE's schedules (shared/papers/fsmoe.md Fig. 2 and 3) on the engine. Each
// generalized layer is the dense part (attention with MP, gate) and the MoE
// part in r chunks: A2A dispatch (inter) -> ESP AllGather (intra) -> experts ->
// ESP ReduceScatter (intra) -> A2A combine (inter). Backward runs the layers
// in reverse with twice the compute. Dense gradients (attention / tp and the
// router) are all-reduced over DP, expert gradients over EDP (the replicas of
// each expert shard; none when edp = 1), each on the stream of its own group's
// link (inter when the group spans nodes, else intra; the one communication
// stream where a schedule has one). Gradient-AllReduce contends with the A2As
// on the inter-node link.
//   none            r = 1, one communication stream, all gradients after backward
//   tutel           r for both phases, A2A overlapped with experts, one
//                   communication stream, all gradients after backward
//   tutel-improved  tutel + each layer's dense gradients all-reduced during the
//                   next generalized layer's dense part (Fig. 3b)
//   pipemoe-lina    gradients in 30 MB chunks in a priority pool below AlltoAll (Lina)
//   fsmoe-no-iio    FSMoE's degrees and gradient partition on one communication stream
//   fsmoe           intra- and inter-node streams apart, FSMoE's degrees and partition
// Expert gradients, which section 5 leaves out (its partition is for the DP
// Gradient-AllReduce): none and tutel all-reduce them after the backward pass
// like their dense gradients; tutel-improved, fsmoe-no-iio and fsmoe during the
// dense part of their own layer, which follows the MoE backward that produced
// them; pipemoe-lina in 30 MB chunks in its pool as soon as the MoE backward ends.
// A gradient all-reduce that overlaps a dense part is issued after the dense
// part's sequence-parallel AllGather: on one stream, ahead of it, it would hold
// back the attention it is meant to hide behind.
// multi_rank (knob): every rank of the cluster with its own streams and the
// same program; each collective one task over its group (tp, etp, ep, dp, edp
// in Megatron's default order); stragglers slow the ranks' compute. Needs
// pp = vpp = 1 (schedule.mode).

#include <string>
#include <vector>

#include <moeplan/sched/schedule.hpp>

namespace moeplan::fsmoe {

const std::vector<std::string>& fsmoe_schedules();

/// @brief Knobs of an FSMoE-family schedule.
struct FsMoeKnobs {
  std::string schedule = "fsmoe";
  std::int64_t degree_forward = 1;
  std::int64_t degree_backward = 1;
  /// Per generalized layer (model order) backward degrees; empty = degree_backward everywhere.
  std::vector<std::int64_t> degree_backward_per_layer;
  /// Per generalized layer (model order): gradient bytes all-reduced while that
  /// layer's backward runs, split into the part overlapping its MoE layer and
  /// the part overlapping its dense part (fsmoe, fsmoe-no-iio). The rest of
  /// the gradients is all-reduced after the backward pass.
  std::vector<double> grad_during_moe_bytes;
  std::vector<double> grad_during_dense_bytes;
  /// Only the MoE layer (and its Gradient-AllReduce of t_gar), one phase: for the
  /// closed-form cross-check.
  bool single_layer_only = false;
  bool backward_only = false;
  bool multi_rank = false;  ///< every rank, collectives over groups (schedule.mode)
  bool record_work = false;  ///< sched::ScheduleKnobs::record_work
};

/// Fixed Lina chunk (PipeMoE/Lina): 30 MB.
inline constexpr double kLinaChunkBytes = 30.0 * 1024 * 1024;

sched::BuiltSchedule build_fsmoe(const model::ScenarioSpec& scenario, const cost::CostModel& costs, const FsMoeKnobs& knobs);

/// Gradient bytes of generalized layer `layer` all-reduced over DP: the dense
/// weights / tp and the router (section 5's Gradient-AllReduce).
double generalized_layer_gradient_bytes(const model::ScenarioSpec& scenario, std::int32_t layer);

/// Expert gradient bytes of generalized layer `layer` all-reduced over EDP (the
/// replicas of each expert shard); 0 when edp = 1 (every expert has one copy).
double generalized_layer_expert_gradient_bytes(const model::ScenarioSpec& scenario, std::int32_t layer);

}  // namespace moeplan::fsmoe
