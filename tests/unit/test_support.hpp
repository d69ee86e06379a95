#pragma once
// Helpers shared by the unit tests.

#include <cstdint>

#include <moeplan/model/specs.hpp>

namespace moeplan::testing {

/// A measured-style cost line t = alpha + n beta for synthetic profiles.
inline model::LinearCostSpec cost_line(model::OpClass op, model::LinkClass link, std::int64_t group, double alpha_ms,
                                       double beta_ms_per_unit) {
  model::LinearCostSpec c;
  c.op = op;
  c.link = link;
  c.group = group;
  c.alpha_ms = alpha_ms;
  c.beta_ms_per_unit = beta_ms_per_unit;
  return c;
}

}  // namespace moeplan::testing
