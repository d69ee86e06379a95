#pragma once
// The knobs a folding scenario leaves to the planner (schedule.search): which
// precisions and recomputations the mapping search tries, and the scenario a
// plan's choice runs (docs/cost-model.md, "Open knobs").

#include <string>
#include <vector>

#include <moeplan/model/specs.hpp>

namespace moeplan::plan {

/// @brief What the mapping search prices each mapping with.
struct OpenKnobs {
  /// One list per precision tried (bf16 first): the scenario with that
  /// precision and each recomputation tried, from the fastest (none) to the
  /// one that keeps the least (full). Recomputation only adds time, so the
  /// first that fits is the precision's best. Nothing searched: {{scenario}}.
  std::vector<std::vector<model::ScenarioSpec>> by_precision;
  std::vector<std::string> notes;  ///< the values left out, and why
};

/// The choices of `scenario`'s schedule.search. Precision: bf16 and each of
/// fp8_tensorwise, fp8_blockwise and mxfp8 that the scenario can price (its
/// GPU, model and profile: model::validate says); fp8_delayed, Transformer
/// Engine's older recipe, is left to the user. Recomputation: none; selective
/// with the output-discarding modules the model has (moe_act, mla_up_proj,
/// layernorm; the element-wise ones where the profile prices them); full
/// (uniform, one block per group).
OpenKnobs open_knobs(const model::ScenarioSpec& scenario);

/// The scenario with a plan candidate's chosen precision and recomputation
/// (knobs.precision, knobs.recompute) and its search closed; `scenario` as it
/// is when the knobs choose neither.
model::ScenarioSpec with_knob_choices(const model::ScenarioSpec& scenario, const model::PlanKnobs& knobs);

}  // namespace moeplan::plan
