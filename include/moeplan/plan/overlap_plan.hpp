#pragma once
// What the families whose schedules overlap one fixed mapping share in their
// plans (FoldMoE, FSMoE and FlowMoE, and any family added like them): a
// candidate per schedule at the scenario's mapping, the baselines none and
// tutel, the JSON keys and text lines around the family's own, and a
// candidate run again on a copy of the scenario with its knobs set.

#include <optional>
#include <string>
#include <vector>

#include <moeplan/io/json.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/family.hpp>
#include <moeplan/plan/plan_result.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::plan {

/// A PlanResult of `run`'s scenario, its family and tokens per iteration set.
PlanResult plan_result_for(const ScenarioRun& run);

/// A candidate of a schedule on the scenario's own mapping: its memory and fit are the scenario's.
Candidate schedule_candidate(const ScenarioRun& run, const Evaluation& evaluation, model::PlanKnobs knobs);

/// The keys the overlap families' plan JSON shares: tutel_ms, memory_bytes_per_gpu, fits, speedup_vs_tutel.
void write_overlap_keys(io::Json& doc, const PlanResult& result);

/// One schedule's entry of the plan's "schedules": its evaluation's keys and its speed-ups over none and tutel.
io::Json schedule_entry(const PlanResult& result, const Evaluation& evaluation);

/// "# FAMILY plan for SCENARIO: MS ms per iteration\nschedule=NAME\n": the start of `--emit knobs`.
std::string knobs_emit_header(const PlanResult& result);

/// The candidate's schedule built and run on a copy of the scenario whose
/// schedule fields are `fields` (the family sets its knobs there), at `degree` when given.
CandidateRun run_on_scenario(const ScenarioRun& run, const model::ScheduleSpec& fields, const std::string& schedule,
                             std::optional<std::int64_t> degree);

}  // namespace moeplan::plan
