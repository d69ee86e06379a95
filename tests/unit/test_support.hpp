#pragma once
// Helpers shared by the unit tests.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <moeplan/core/error.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::testing {

/// A measured-style cost line t = alpha + n beta for synthetic profiles, measured
/// with `ranks_per_node` of its group on one node (empty: nodes filled in rank order).
inline model::LinearCostSpec cost_line(model::OpClass op, model::LinkClass link, std::int64_t group, double alpha_ms,
                                       double beta_ms_per_unit,
                                       std::optional<std::int64_t> ranks_per_node = std::nullopt) {
  model::LinearCostSpec c;
  c.op = op;
  c.link = link;
  c.group = group;
  c.ranks_per_node = ranks_per_node;
  c.alpha_ms = alpha_ms;
  c.beta_ms_per_unit = beta_ms_per_unit;
  return c;
}

/// The field and reason of the Error `call` throws; ("", "") when it throws none
/// (a CHECK on the field then fails, naming what was expected).
template <typename Call>
std::pair<std::string, std::string> error_of(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return {e.field(), e.reason()};
  }
  return {};
}

}  // namespace moeplan::testing
