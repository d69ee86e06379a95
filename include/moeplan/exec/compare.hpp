#pragma once
// Simulated against measured: per operation class, the iteration, and the
// exposed communication, from two timelines of one task graph.

#include <cstdint>
#include <string>
#include <vector>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::exec {

/// @brief One operation class's tasks: durations in ms.
struct OpComparison {
  model::OpClass op = model::OpClass::Gemm;
  std::size_t tasks = 0;
  double simulated_median_ms = 0;
  double simulated_p95_ms = 0;
  double measured_median_ms = 0;
  double measured_p95_ms = 0;
  /// 100 (simulated median - measured median) / measured median; 0 when the measured median is 0.
  double error_pct = 0;
};

/// @brief The whole comparison.
struct Comparison {
  std::vector<OpComparison> ops;  ///< classes with tasks, in model::OpClass order
  double simulated_iteration_ms = 0;
  double measured_iteration_ms = 0;
  /// 100 (simulated - measured) / measured, signed: negative = the simulator is optimistic.
  double iteration_error_pct = 0;
  /// Communication not hidden under compute on the critical rank (sim::summarize of each timeline).
  double simulated_exposed_comm_ms = 0;
  double measured_exposed_comm_ms = 0;
};

/// p-th percentile (0..100) by the nearest-rank rule: the value at rank
/// ceil(p/100 n) of the sorted values (1-based); the median is the usual
/// median (mean of the two middle values for an even count). Empty: error.
double percentile(std::vector<double> values, double p);

/// Compares two timelines of `graph` (same task ids). Error (runtime) when a
/// timeline does not cover the graph or holds a value that is not finite.
Comparison compare(const dag::TaskGraph& graph, const sim::Timeline& simulated, const sim::Timeline& measured);

}  // namespace moeplan::exec
