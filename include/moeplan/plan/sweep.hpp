#pragma once
// Evaluating one point of a sweep: every schedule of the scenario's family,
// each at the knobs its planner chooses.

#include <optional>
#include <string>
#include <vector>

#include <moeplan/plan/evaluation.hpp>

namespace moeplan::plan {

/// The schedules of a family (foldmoe, fsmoe), in CLI.md order.
const std::vector<std::string>& family_schedules(const std::string& family);

/// @brief The knobs a planner chose for one schedule of a sweep point.
struct PlannedKnobs {
  std::int64_t degree_forward = 1;
  std::int64_t degree_backward = 1;
  std::int64_t ar_chunk_bytes = 0;  ///< FlowMoE's Sp; 0 for schedules without chunks
  /// Gradient bytes the plan all-reduces while layers run: FSMoE's section 5
  /// partition (during_moe + during_dense, summed over layers) for fsmoe and
  /// fsmoe-no-iio; 0 for schedules without a partition.
  double grad_partition_bytes = 0;
  /// Folding: the mapping the search chose and its micro-batch size.
  std::optional<model::ParallelSpec> parallelism;
  std::int64_t micro_batch_size = 0;
};

/// @brief One schedule of a sweep point: its evaluation at the knobs its planner chose.
struct PointResult {
  Evaluation evaluation;
  PlannedKnobs knobs;
};

/// Each requested schedule (empty = the family's, less those the scenario's
/// knobs rule out) at its planned knobs: FoldMoE's best degree, FSMoE's degrees
/// and gradient partition, FlowMoE's R and Sp; for a folding scenario the best
/// folded and coupled mappings that fit (iteration NaN when none fits: the CSV
/// leaves it empty). Input error (field "schedules") for a requested schedule
/// the scenario's family does not have.
std::vector<PointResult> evaluate_point(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                                        const std::vector<std::string>& schedules, unsigned threads = 1);

}  // namespace moeplan::plan
