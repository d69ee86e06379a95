#pragma once
// What an overlap family's schedule does to the layers of a parallel mapping
// (issue 17 item 3, docs/cost-model.md "Joint search: mapping x overlap"): a
// probe runs one micro-batch through one and through two MoE layers of the
// mapping's shapes (tp, cp, ep, etp, micro-batch; pp = 1) with the family's
// own schedule builder on the engine, and again with the family's `none`.
// The difference is what the schedule hides; probes of 1 and 2 layers give it
// for any number of layers (linear in the layers: the first layer's and each
// further layer's share). With the mapping's DP and EDP groups, the same
// probes say which fraction of the gradient traffic the schedule hides.

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::plan {

/// @brief What of a mapping decides the tasks of one layer: a probe's key.
struct LayerShape {
  std::int64_t tp = 1, cp = 1, ep = 1, etp = 1, micro_batch = 1;
  /// The gradient groups: 1 and 1 for a probe without gradient traffic.
  std::int64_t dp = 1, edp = 1;
  friend auto operator<=>(const LayerShape&, const LayerShape&) = default;
};

/// @brief An overlap schedule at its knobs.
struct OverlapSchedule {
  /// The family and schedule written for no overlap (the mapping search's price).
  static constexpr const char* kNone = "none";
  std::string family;    ///< a family with overlap schedules, or kNone
  std::string schedule;  ///< a schedule of the family (never its none), or kNone
  /// The family's degree (FoldMoE d, FlowMoE R); 0 for a family whose planner
  /// derives it per phase on each probe (FSMoE's closed forms, as `plan` does).
  std::int64_t degree = 0;
  /// No overlap.
  bool none() const { return family == kNone; }
  friend auto operator<=>(const OverlapSchedule&, const OverlapSchedule&) = default;
};

/// @brief One probe run: one micro-batch through the probe's layers (ms).
struct ProbeTime {
  double forward_ms = 0;    ///< end of the last forward task
  double backward_ms = 0;   ///< iteration less forward: backward and gradient traffic
  double iteration_ms = 0;
};

/// @brief A schedule on a layer shape: its probes and its family's none's.
struct ProbedSchedule {
  OverlapSchedule schedule;
  ProbeTime one, two;            ///< the schedule on 1 and 2 layers
  ProbeTime none_one, none_two;  ///< the family's none on the same probes
  std::int64_t degree_forward = 0, degree_backward = 0;  ///< as built (FSMoE's closed forms; else the degree)

  /// What the schedule takes off `layers` layers of one micro-batch against
  /// its family's none: s(1) + (layers - 1) (s(2) - s(1)). Negative when it is slower.
  double forward_saved_ms(std::int64_t layers) const;
  double backward_saved_ms(std::int64_t layers) const;
};

/// The probe of `shape`: the scenario's model cut to `layers` MoE layers, the
/// shape's parallelism (pp = vpp = 1, sequence parallel), one micro-batch per
/// DP rank, schedule family `family` with nothing fixed, balanced routing, on
/// the nodes of the scenario's cluster its ranks fill (whatever the cluster's size).
model::ScenarioSpec probe_scenario(const model::ScenarioSpec& scenario, const LayerShape& shape, std::int64_t layers,
                                   const std::string& family);

/// The degrees the joint search tries for a family's schedules (OverlapProbing::probe_degrees).
std::vector<std::int64_t> probe_degrees(const std::string& family, const model::ScenarioSpec& probe);

/// Every schedule of `families` (with overlap schedules) at every degree the
/// joint search tries, probed on `shape` without gradient traffic (its dp and
/// edp are ignored). A degree the builder refuses for this shape is left out.
/// In family order, then schedule order, then degree.
std::vector<ProbedSchedule> probe_layer_shape(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                                              const LayerShape& shape, const std::vector<std::string>& families);

/// One schedule at its degree probed on `shape` without gradient traffic;
/// an input Error when its builder refuses the degree for this shape.
ProbedSchedule probe_schedule(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                              const LayerShape& shape, const OverlapSchedule& schedule);

/// @brief What the gradient traffic of the shape's dp and edp adds to a
/// schedule's and to its family's none's probes, on 1 and 2 layers (ms).
struct GradientProbe {
  double exposed_one = 0, exposed_two = 0;            ///< the schedule
  double none_exposed_one = 0, none_exposed_two = 0;  ///< its family's none: the whole traffic, after the backward pass

  /// The fraction of `layers` layers' gradient traffic the schedule hides:
  /// 1 - exposed(layers) / none_exposed(layers), each linear in the layers
  /// from the probes of 1 and 2, within [0, 1]; 0 when there is no traffic.
  double hidden_fraction(std::int64_t layers) const;
};

/// Probes each of `probed`'s schedules (at its degree; all of one family) and
/// their family's none with the gradient groups of `shape` (dp, edp), against
/// the probes without them. One result per schedule, in order.
std::vector<GradientProbe> probe_gradients(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                                           const LayerShape& shape, const std::vector<const ProbedSchedule*>& probed);

}  // namespace moeplan::plan
