#pragma once
// What a drawn timeline shows besides its tasks, shared by the SVG Gantt chart
// and the HTML report (issue 18 item 3): a time axis with round ticks, the
// instant the forward pass gives way to the backward pass, the operation
// classes present (the legend), and one colour per operation class.

#include <optional>
#include <string>
#include <vector>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::output {

/// @brief One tick of an axis: its value and the label written under it.
struct AxisTick {
  double value = 0;
  std::string label;
};

/// Ticks at a round step over [lo, hi]: the step is 1, 2 or 5 times a power of
/// ten, the smallest such that at most `max_ticks` + 1 ticks cover the range,
/// and every tick is a whole multiple of it (0..1234 with 8 ticks: step 200,
/// ticks 0, 200, ..., 1200). Labels carry as many decimals as the step needs
/// ("0.2", "0.4"; "200"). An empty or reversed range is widened to [lo, lo + 1].
std::vector<AxisTick> axis_ticks(double lo, double hi, int max_ticks = 8);

/// The step axis_ticks chooses for a range and tick count (exposed for tests
/// and for the HTML report, which draws the same axis).
double axis_tick_step(double lo, double hi, int max_ticks = 8);

/// The instant the drawn forward pass ends and the backward pass begins: the
/// latest end of a forward task when no backward task starts before it (the
/// overlap families run every forward task before the first backward one).
/// Empty when the phases interleave (a 1F1B pipeline), or when one is absent.
/// `shown`: per resource, whether it is drawn (empty: all).
std::optional<double> phase_divider_ms(const dag::TaskGraph& graph, const sim::Timeline& timeline,
                                       const std::vector<bool>& shown = {});

/// The operation classes of the drawn tasks, in model::OpClass order: the
/// legend lists these and no others.
std::vector<model::OpClass> ops_present(const dag::TaskGraph& graph, const std::vector<bool>& shown = {});

/// The colour of an operation class (Okabe-Ito, colour-blind safe), "#RRGGBB".
const char* op_colour(model::OpClass op);

}  // namespace moeplan::output
