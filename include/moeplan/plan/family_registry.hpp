#pragma once
// The registry of schedule families (plan/family.hpp): filled once at start-up
// (family/builtin.hpp registers the bundled ones; a test may add its own), then
// only read. Generic code finds a scenario's family here and never names one.

#include <string_view>
#include <vector>

#include <moeplan/plan/family.hpp>

namespace moeplan::plan {

/// Adds a family and its rules (model::register_family_rules). The object must
/// outlive every use (a static). A second family of the same name is a
/// runtime Error; the same object again is harmless.
void register_family(const Family& family);
/// Every registered family, in registration order.
const std::vector<const Family*>& registered_families();
/// The family of that name; input Error (field schedule.family) naming the registered ones otherwise.
const Family& family_named(std::string_view name);
/// The scenario's family.
const Family& family_of(const model::ScenarioSpec& scenario);
/// The registered families with overlap schedules (Family::overlap()), in order.
std::vector<const Family*> overlap_families();
/// The registered family that searches mappings (the joint search's and
/// capacity's scenarios are of it); runtime Error when none is registered.
const Family& mapping_family();
/// The names of the families whose search records emit `format` ("knobs",
/// "megatron"), in order; for errors.
std::vector<std::string> families_emitting(std::string_view format);

}  // namespace moeplan::plan
