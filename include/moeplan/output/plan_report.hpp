#pragma once
// How a plan is shown: one JSON shape and one text for every family (issue 17
// item 1), from plan::PlanResult alone: the shared keys and lines here, the
// family's own from its search record (plan/search_record.hpp).
// docs/plan.schema.json is the JSON's schema; docs/cli.md lists the keys.

#include <cstddef>
#include <string>

#include <moeplan/io/json.hpp>
#include <moeplan/plan/explanation.hpp>
#include <moeplan/plan/plan_result.hpp>

namespace moeplan::output {

/// Runs within this fraction of the best are ties: the model's own error
/// (docs/validation.md) is larger than 1%, so the order among them is not a finding.
inline constexpr double kTieFraction = 0.01;

/// The plan's JSON: CLI.md's plan keys (scenario, schedule, iteration_ms,
/// baseline_ms, speedup, knobs), the shape every family shares (family,
/// chosen, candidates: the best `top` with gap_pct, baselines, explanation),
/// then the family's own search record. `explanation` (plan::explain) adds
/// edge_knobs, binding_constraint, savings, sensitivity and fragile to the
/// explanation object when given.
io::Json plan_to_json(const plan::PlanResult& result, const plan::Explanation* explanation = nullptr,
                      std::size_t top = 10);

/// The plan as a person reads it (the text `moeplan plan` prints): the
/// record's lines, then with `explanation` a "why" paragraph: margin and ties,
/// edges, binding constraint, savings against the baseline, sensitivity.
std::string plan_to_text(const plan::PlanResult& result, const plan::Explanation* explanation = nullptr);

}  // namespace moeplan::output
