#pragma once
// What the model layer knows of a schedule family (docs/architecture.md,
// "Families"): its name, its schedules, the options that act on its scenarios,
// its own validation, and how a plan file's knobs become scenario fields.
// A family registers these rules once at start-up (family/builtin.hpp for the
// bundled four, a test for a toy one); validation, the loader and the plan
// reader ask the registry and never name a family.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <moeplan/model/options.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::model {

/// @brief One scenario field a plan file's knobs set (io::plan_knob_overrides).
struct KnobSetting {
  std::string field;       ///< the scenario field, as --set writes it ("schedule.degree")
  std::string value;       ///< as --set writes it
  std::string plan_field;  ///< the plan file's field it comes from ("knobs.degree"), for errors
};

/// @brief A family's rules: what validation and the loader ask of it.
class FamilyRules {
 public:
  virtual ~FamilyRules() = default;
  /// The name scenarios give in schedule.family.
  virtual const std::string& name() const = 0;
  /// Its schedules in the CLI's order; a family that runs no named schedule
  /// (it searches mappings) lists what `plan` searches instead.
  virtual const std::vector<std::string>& schedules() const = 0;
  /// Whether a scenario of the family names one of schedules() in schedule.name.
  virtual bool names_schedules() const { return true; }
  /// The family-dependent option fields (OptionRule::field spelling) its
  /// schedules and planner read: a field some family reads and this one
  /// neither reads nor has a rule for cannot act on its scenarios.
  virtual const std::vector<std::string>& read_fields() const = 0;
  /// Where options cannot act on the family's scenarios: OptionRule::where is
  /// the condition within the family ("" when the field never acts).
  virtual const std::vector<OptionRule>& option_rules() const = 0;
  /// The family's own checks of a scenario that passed the generic ones
  /// (input Error naming the field).
  virtual void validate(const ScenarioSpec& scenario) const { (void)scenario; }
  /// Why the scenario's own knobs rule `schedule` out; empty when it runs.
  virtual std::optional<std::string> ruled_out(const ScenarioSpec& scenario, const std::string& schedule) const {
    (void)scenario;
    (void)schedule;
    return std::nullopt;
  }
  /// The scenario fields a plan of this family sets from its knobs, so that the
  /// plan's scenario runs the plan again (input Error naming the plan field).
  virtual std::vector<KnobSetting> plan_knob_settings(const PlanSpec& plan) const = 0;
};

/// Adds a family's rules (the object must outlive every use: a static). A
/// second family of the same name is a runtime Error.
void register_family_rules(const FamilyRules& rules);
/// Every registered family, in registration order (the order errors list them).
const std::vector<const FamilyRules*>& registered_family_rules();
/// The family of that name, or nullptr.
const FamilyRules* find_family_rules(std::string_view name);
/// The family of that name; input Error (field schedule.family) naming the
/// registered ones otherwise.
const FamilyRules& family_rules(std::string_view name);
/// The families that have a schedule of this name (empty: no such schedule).
std::vector<std::string> families_with_schedule(std::string_view schedule);
/// True for a schedule a scenario can name (of a family whose names_schedules()).
bool is_known_schedule(std::string_view schedule);
/// "a, b, c", for messages.
std::string join_names(const std::vector<std::string>& names);
/// "a, b and c", for messages.
std::string join_names_and(const std::vector<std::string>& names);
/// The registered families whose scenarios name one of their schedules (FamilyRules::names_schedules).
std::vector<std::string> families_naming_schedules();
/// The registered families' names, in order.
std::vector<std::string> family_names();

}  // namespace moeplan::model
