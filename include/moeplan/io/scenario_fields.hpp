#pragma once
// Every scalar field a resolved scenario holds (its model, cluster and
// profile in place), with its value written as --set takes it: what the
// field-coverage test perturbs to prove that each field acts or is refused.

#include <optional>
#include <string>
#include <vector>

#include <moeplan/io/loader.hpp>

namespace moeplan::io {

/// @brief One scalar field of a resolved scenario.
struct ScenarioField {
  enum class Type { Integer, Real, Boolean, Enum, Text };
  std::string path;         ///< as --set takes it: "model.moe.top_k", "profile.costs[2].alpha_ms"
  std::string schema_path;  ///< the same with every index written [*]: one name per schema field
  Type type = Type::Integer;
  bool repeated = false;               ///< a repeated scalar; value is its comma-separated list
  std::optional<std::string> value;    ///< absent when the field is not set (its default applies)
  std::vector<std::string> choices;    ///< an enum's value names, UNSPECIFIED left out
};

/// The scalar fields of the scenario's schema, in schema order, after its
/// references, `set:` lines and the overrides are applied. Reference names
/// (model_ref, ...) and the `set` list itself are not fields of the result
/// and are left out; a repeated message lists each element's fields.
std::vector<ScenarioField> scenario_fields(const std::string& name_or_path,
                                           const std::vector<Override>& overrides = {});

}  // namespace moeplan::io
