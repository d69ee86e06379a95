#pragma once
// FoldMoE's rules (model/family_rules.hpp): its five schedules, the options
// that act on its scenarios, and how a plan's knobs set a scenario.

#include <moeplan/model/family_rules.hpp>

namespace moeplan::foldmoe {

/// The family's rules (a static: registered once, read by validation).
const model::FamilyRules& rules();

}  // namespace moeplan::foldmoe
