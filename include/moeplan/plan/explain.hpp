#pragma once
// Why a plan won, in terms a person can check (issue 17 item 5): knobs at the
// edge of their searched range, the constraint that bound the choice, what the
// winner saves against the baseline in the cost breakdown's terms, and whether
// the ranking survives each bandwidth and the GEMM speed moved by +-20%.

#include <cstddef>
#include <string>

#include <moeplan/plan/explanation.hpp>
#include <moeplan/plan/plan_result.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::plan {

/// The perturbations: each of inter-node bandwidth, intra-node bandwidth and
/// GEMM speed times 0.8 and 1.2 (the +-20% of issue 17; datasheet figures and
/// fitted lines are rarely closer than that to a real run, docs/validation.md).
inline constexpr double kSensitivityScales[] = {0.8, 1.2};
/// Candidates re-evaluated under each perturbation: the best few decide the ranking's top.
inline constexpr std::size_t kSensitivityCandidates = 5;

/// The iteration time of one candidate at its knobs on `run`'s cost model
/// (the planner's "evaluate one", SearchRecord::evaluate_candidate).
double evaluate_candidate(const ScenarioRun& run, const PlanResult& result, const Candidate& candidate);

/// The scenario with its cost profile moved: communication lines of `link`
/// (or GEMM lines, for gemm_speed) with beta divided by `scale` (faster by
/// `scale`); alpha (startup) unchanged. gemm_speed also multiplies a GEMM
/// shape model's peak (its compute rate) by `scale`; its memory side stays.
model::ScenarioSpec perturbed(const model::ScenarioSpec& scenario, const std::string& what, double scale);

/// Everything above for a plan made on `run`.
Explanation explain(const ScenarioRun& run, const PlanResult& result);

}  // namespace moeplan::plan
