#pragma once
// Why a plan won, in terms a person can check (issue 17 item 5): knobs at the
// edge of their searched range, the constraint that bound the choice, what the
// winner saves against the baseline in the cost breakdown's terms, and whether
// the ranking survives each bandwidth and the GEMM speed moved by +-20%.

#include <optional>
#include <string>
#include <vector>

#include <moeplan/plan/planner.hpp>

namespace moeplan::plan {

/// @brief A chosen knob at an end of the range the planner searched.
struct EdgeKnob {
  std::string knob;  ///< e.g. "degree", "ar_chunk_bytes"
  std::int64_t value = 0;
  std::int64_t searched_min = 0;
  std::int64_t searched_max = 0;
  std::string advice;
};

/// @brief What bound the choice.
struct BindingConstraint {
  std::string name;    ///< "memory", or "none"
  std::string detail;  ///< e.g. the faster mapping that did not fit
};

/// @brief One term of the cost breakdown: the baseline's ms minus the chosen one's.
struct Saving {
  std::string term;  ///< exposed_comm_ms, bubble_ms, a2a_critical_ms, ...
  double baseline_ms = 0;
  double chosen_ms = 0;
};

/// @brief The ranking under one perturbed cost profile.
struct Perturbation {
  std::string what;  ///< inter_bandwidth, intra_bandwidth or gemm_speed
  double scale = 1;  ///< 0.8 or 1.2: bandwidth (or GEMM FLOP/s) times this
  std::size_t winner = 0;  ///< index into PlanResult::candidates of the fastest re-evaluated one
  double chosen_ms = 0;    ///< the chosen candidate re-evaluated
  double winner_ms = 0;
};

/// @brief The explanation of one plan.
struct Explanation {
  std::vector<EdgeKnob> edges;
  BindingConstraint binding;
  std::string savings_baseline;  ///< the baseline the savings are against (empty: none)
  std::vector<Saving> savings;
  std::size_t sensitivity_candidates = 0;  ///< the best candidates re-evaluated under each perturbation
  std::vector<Perturbation> sensitivity;
  bool fragile = false;  ///< some perturbation makes another candidate win
};

/// The perturbations: each of inter-node bandwidth, intra-node bandwidth and
/// GEMM speed times 0.8 and 1.2 (the +-20% of issue 17; datasheet figures and
/// fitted lines are rarely closer than that to a real run, docs/validation.md).
inline constexpr double kSensitivityScales[] = {0.8, 1.2};
/// Candidates re-evaluated under each perturbation: the best few decide the ranking's top.
inline constexpr std::size_t kSensitivityCandidates = 5;

/// The iteration time of one candidate at its knobs on `run`'s cost model
/// (the planner's "evaluate one"): FoldMoE d and slices, FlowMoE R and Sp,
/// FSMoE's closed forms derived on this cost model, a folding mapping priced.
double evaluate_candidate(const ScenarioRun& run, const PlanResult& result, const Candidate& candidate);

/// The scenario with its cost profile moved: communication lines of `link`
/// (or GEMM lines, for gemm_speed) with beta divided by `scale` (faster by
/// `scale`); alpha (startup) unchanged. gemm_speed also multiplies a GEMM
/// shape model's peak (its compute rate) by `scale`; its memory side stays.
model::ScenarioSpec perturbed(const model::ScenarioSpec& scenario, const std::string& what, double scale);

/// Everything above for a plan made on `run`.
Explanation explain(const ScenarioRun& run, const PlanResult& result);

}  // namespace moeplan::plan
