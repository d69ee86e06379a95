#pragma once
// Evaluating one point of a sweep: every schedule of the scenario's family,
// each at the knobs its planner chooses.

#include <string>
#include <vector>

#include <moeplan/plan/evaluation.hpp>

namespace moeplan::plan {

/// The schedules of a family (foldmoe, fsmoe), in CLI.md order.
const std::vector<std::string>& family_schedules(const std::string& family);

/// Each requested schedule (empty = the family's) at its planned knobs:
/// FoldMoE's best degree, or FSMoE's degrees and gradient partition.
std::vector<Evaluation> evaluate_point(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                                       const std::vector<std::string>& schedules);

}  // namespace moeplan::plan
