#pragma once
// MoE Parallel Folding's rules (model/family_rules.hpp): it runs no named
// schedule (it searches mappings: folded, coupled), the options that act on
// its scenarios, and how a plan's mapping sets a scenario.

#include <moeplan/model/family_rules.hpp>

namespace moeplan::folding {

/// The family's rules (a static: registered once, read by validation).
const model::FamilyRules& rules();

}  // namespace moeplan::folding
