#pragma once
// A plan's candidate run again at its knobs, keeping its graph and timeline:
// what the report draws (issue 18 item 2) and what the explanation re-prices
// under a perturbed profile (plan::evaluate_candidate).

#include <optional>

#include <moeplan/plan/planner.hpp>
#include <moeplan/sched/schedule.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::plan {

/// @brief A candidate's graph as built at its knobs, and its simulated timeline.
struct CandidateRun {
  sched::BuiltSchedule built;
  sim::Timeline timeline;  ///< its makespan is the candidate's iteration time
};

/// The candidate at its knobs on `run`'s cost model: FoldMoE d and slices,
/// FlowMoE R and Sp, FSMoE's closed forms derived on this cost model (the
/// builder's own), a folding mapping's pipeline.
CandidateRun run_candidate(const ScenarioRun& run, const PlanResult& result, const Candidate& candidate);

/// The plan's first baseline run the same way: schedule `none` at the degree
/// its search evaluated it (folding: the best coupled mapping). Empty when the
/// plan has no such baseline (no coupled mapping fits).
std::optional<CandidateRun> run_baseline(const ScenarioRun& run, const PlanResult& result);

}  // namespace moeplan::plan
