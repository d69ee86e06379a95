#pragma once
// How a plan is shown: one JSON shape and one text table for every family
// (issue 17 item 1), from plan::PlanResult alone. The CLI prints these; it
// assembles no family's output itself. docs/plan.schema.json is the JSON's
// schema; docs/cli.md lists the keys.

#include <cstddef>
#include <string>

#include <moeplan/io/json.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/explain.hpp>
#include <moeplan/plan/planner.hpp>

namespace moeplan::report {

/// CLI.md `simulate` keys of one evaluated schedule.
io::Json evaluation_to_json(const std::string& scenario, const plan::Evaluation& e);

/// Runs within this fraction of the best are ties: the model's own error
/// (docs/validation.md) is larger than 1%, so the order among them is not a finding.
inline constexpr double kTieFraction = 0.01;

/// The plan's JSON: CLI.md's plan keys (scenario, schedule, iteration_ms,
/// baseline_ms, speedup, knobs), the shape every family shares (family,
/// chosen, candidates: the best `top` with gap_pct, baselines, explanation),
/// then the family's own search record (foldmoe: schedules with degrees_tried;
/// fsmoe: closed_form and schedules; flowmoe: bo_trace and schedules;
/// folding: folded, coupled, top10, mappings_searched).
/// `explanation` (plan::explain) adds edge_knobs, binding_constraint, savings,
/// sensitivity and fragile to the explanation object when given.
io::Json plan_to_json(const plan::PlanResult& result, const plan::Explanation* explanation = nullptr,
                      std::size_t top = 10);

/// The plan as a person reads it (the text `moeplan plan` prints).
/// With `explanation`, a "why" paragraph follows: margin and ties, edges,
/// binding constraint, savings against the baseline, sensitivity.
std::string plan_to_text(const plan::PlanResult& result, const plan::Explanation* explanation = nullptr);

/// A candidate's knobs in a few words ("d 6", "d 2 Sp 4194304", "tp 1 cp 4 pp 4 vpp 1 ep 2 etp 1 mb 1"),
/// as the "why" paragraph names runners-up.
std::string knobs_text(const model::PlanKnobs& knobs);

/// `plan --emit megatron`: a folding plan as Megatron-LM training arguments
/// (parallel sizes, virtual stages, micro-batch, recompute) and a comment line
/// with what the plan assumed (rank order, optimizer overlap). Input error
/// (field --emit) for another family.
std::string emit_megatron(const plan::PlanResult& result, const model::ScenarioSpec& scenario);

/// `plan --emit knobs`: an overlap plan's knobs as its reference system takes
/// them, one key=value a line (FoldMoE/Tutel d and slices, FSMoE r per phase
/// and the gradient partition, FlowMoE R and Sp in bytes). Input error (field
/// --emit) for a folding plan.
std::string emit_knobs(const plan::PlanResult& result);

}  // namespace moeplan::report
