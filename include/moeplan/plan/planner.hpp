#pragma once
// `moeplan plan` as a library call (issue 17 item 1): the scenario's family
// searches the knobs the scenario leaves open and answers with the one
// PlanResult shape (plan/plan_result.hpp); plan/joint.hpp's plan_joint is
// the other planner (every mapping with every overlap schedule).

#include <moeplan/plan/plan_result.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/plan/search_record.hpp>

namespace moeplan::plan {

/// The scenario planned by its family (Family::plan).
PlanResult plan_scenario(const ScenarioRun& run, const PlanRequest& request);

/// `plan --emit`: the chosen plan as its reference system takes it, in
/// `format` ("knobs" or "megatron"). Input error (field request.emit) when the
/// plan's record emits the other form.
std::string emit_plan(const PlanResult& result, const model::ScenarioSpec& scenario, const std::string& format);

}  // namespace moeplan::plan
