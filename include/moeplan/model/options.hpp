#pragma once
// Which options can act on which scenarios. An option is a field the user
// chose (model/specs.hpp ScenarioSpec::options): the parallelism, workload and
// schedule fields a scenario writes, and every `set:` line and --set. Tables
// say where each cannot act and why: one here for every family, and one per
// family (FamilyRules::option_rules); validation refuses such an option (never
// ignores it), docs/formats.md prints the tables, and the field-coverage test
// checks that every field not in them changes the result.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/model/specs.hpp>

namespace moeplan::model {

/// @brief Where one field cannot act.
struct OptionRule {
  std::string field;  ///< a path as --set writes it, indices as [*]; a path ending in '.' covers a whole message
  /// For the docs: the scenarios on which it cannot act (a family's rule: the
  /// condition within the family, "" when it never acts there).
  std::string where;
  std::string why;    ///< for the error and the docs
  std::function<bool(const ScenarioSpec&)> inert;  ///< true where the field cannot act
};

/// @brief A field that names or describes and never changes a number: accepted anywhere.
struct LabelField {
  std::string field;  ///< a schema path, indices as [*]
  std::string why;
};

/// The labels, in the order docs/formats.md prints them.
const std::vector<LabelField>& label_fields();

/// The rules of every family, in the order docs/formats.md prints them.
const std::vector<OptionRule>& generic_option_rules();

/// The path with every index ("costs[3]") written "[*]", as the table writes it.
std::string option_schema_path(const std::string& path);

/// Why `field` cannot act on `scenario`, or nothing when it can: the generic
/// rules, then its family's, then a field another family reads that this
/// family neither reads nor has a rule for.
std::optional<std::string> inert_option(const ScenarioSpec& scenario, const std::string& field);

/// Input error (field = the option) for the first of scenario.options that cannot act.
void check_options(const ScenarioSpec& scenario);

/// The tables as Markdown (options that cannot act: the generic rules, then
/// the registered families' merged by field and reason; then labels), for docs/formats.md.
std::string option_rules_markdown();

}  // namespace moeplan::model
