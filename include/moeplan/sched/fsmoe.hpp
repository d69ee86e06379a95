#pragma once
// FSMoE's schedules (shared/papers/fsmoe.md Fig. 2 and 3) on the engine. Each
// generalized layer is the dense part (attention with MP, gate) and the MoE
// part in r chunks: A2A dispatch (inter) -> ESP AllGather (intra) -> experts ->
// ESP ReduceScatter (intra) -> A2A combine (inter). Backward runs the layers
// in reverse with twice the compute; Gradient-AllReduce (inter) contends with
// the A2As on the inter-node link.
//   none            r = 1, one communication stream, gradients all-reduced after backward
//   tutel           r for both phases, A2A overlapped with experts, one communication stream
//   tutel-improved  tutel + each layer's gradients all-reduced during the next dense part
//   pipemoe-lina    gradients in 30 MB chunks in a priority pool below AlltoAll (Lina)
//   fsmoe-no-iio    FSMoE's degrees and gradient partition on one communication stream
//   fsmoe           intra- and inter-node streams apart, FSMoE's degrees and partition

#include <string>
#include <vector>

#include <moeplan/sched/schedule.hpp>

namespace moeplan::sched {

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
};

/// Fixed Lina chunk (PipeMoE/Lina): 30 MB.
inline constexpr double kLinaChunkBytes = 30.0 * 1024 * 1024;

BuiltSchedule build_fsmoe(const model::ScenarioSpec& scenario, const cost::CostModel& costs, const FsMoeKnobs& knobs);

/// Gradient bytes of generalized layer `layer` all-reduced over DP (dense
/// weights / tp and router; expert weights too when edp > 1).
double generalized_layer_gradient_bytes(const model::ScenarioSpec& scenario, std::int32_t layer);

}  // namespace moeplan::sched
