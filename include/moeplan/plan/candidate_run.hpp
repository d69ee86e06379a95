#pragma once
// A plan's candidate run again at its knobs, keeping its graph and timeline:
// what the report draws (issue 18 item 2) and what the explanation re-prices
// under a perturbed profile. The plan's family runs it (Family::run_candidate).

#include <optional>
#include <string>
#include <vector>

#include <moeplan/plan/family.hpp>
#include <moeplan/plan/plan_result.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::plan {

/// The candidate at its knobs on `run`'s cost model.
CandidateRun run_candidate(const ScenarioRun& run, const PlanResult& result, const Candidate& candidate);

/// The plan's first baseline run the same way, with the knobs it ran at.
/// Empty when the plan has no such baseline (no coupled mapping fits).
std::optional<BaselineRun> run_baseline(const ScenarioRun& run, const PlanResult& result);

/// @brief A plan's choice and baseline run again, as a report draws them.
struct PlanRuns {
  Candidate chosen;                     ///< the candidate drawn as chosen (a plan file's own, else the plan's)
  CandidateRun chosen_run;
  std::optional<BaselineRun> baseline;  ///< the plan's first baseline, when it has one that runs
  std::vector<std::string> notes;       ///< where a plan file's figures differ from its run now
};

/// The plan's chosen candidate (or `plan_file`'s own choice) and its first
/// baseline run again on `run`'s cost model. A run that does not reproduce the
/// plan's own figure (beyond rounding) is an internal error; a plan file's
/// that does not is a note (its scenario or profile changed since it was written).
PlanRuns run_plan_again(const ScenarioRun& run, const PlanResult& result,
                        const std::optional<model::PlanSpec>& plan_file = std::nullopt);

}  // namespace moeplan::plan
