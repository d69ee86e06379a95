#include <moeplan/exec/compare.hpp>

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/sim/analysis.hpp>

namespace moeplan::exec {
namespace {

constexpr std::size_t kOpClasses = 7;  // model::OpClass: Gemm .. P2P

double signed_error_pct(double simulated, double measured) {
  return measured > 0 ? 100.0 * (simulated - measured) / measured : 0.0;
}

void check_covers(const dag::TaskGraph& graph, const sim::Timeline& tl, const char* which) {
  if (tl.start_ms.size() != graph.size() || tl.end_ms.size() != graph.size())
    throw Error(ErrorKind::Runtime, fmt::format("the {} timeline has {} tasks, the graph {}", which,
                                                tl.start_ms.size(), graph.size()));
  for (std::size_t t = 0; t < graph.size(); ++t)
    if (!std::isfinite(tl.start_ms[t]) || !std::isfinite(tl.end_ms[t]) || tl.end_ms[t] < tl.start_ms[t])
      throw Error(ErrorKind::Runtime, fmt::format("the {} timeline's task {} runs {} .. {} ms", which, t,
                                                  tl.start_ms[t], tl.end_ms[t]));
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  MOEPLAN_CHECK(!values.empty(), "a percentile of no values");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (p == 50) return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  const double rank = std::ceil(p / 100.0 * static_cast<double>(n));
  const std::size_t index = static_cast<std::size_t>(std::clamp(rank, 1.0, static_cast<double>(n))) - 1;
  return values[index];
}

Comparison compare(const dag::TaskGraph& graph, const sim::Timeline& simulated, const sim::Timeline& measured) {
  check_covers(graph, simulated, "simulated");
  check_covers(graph, measured, "measured");
  std::array<std::vector<double>, kOpClasses> sim_ms, real_ms;
  for (dag::TaskId t = 0; t < graph.size(); ++t) {
    const std::size_t op = static_cast<std::size_t>(graph.op(t));
    sim_ms[op].push_back(simulated.end_ms[t] - simulated.start_ms[t]);
    real_ms[op].push_back(measured.end_ms[t] - measured.start_ms[t]);
  }
  Comparison c;
  for (std::size_t op = 0; op < kOpClasses; ++op) {
    if (sim_ms[op].empty()) continue;
    OpComparison o;
    o.op = static_cast<model::OpClass>(op);
    o.tasks = sim_ms[op].size();
    o.simulated_median_ms = percentile(sim_ms[op], 50);
    o.simulated_p95_ms = percentile(sim_ms[op], 95);
    o.measured_median_ms = percentile(real_ms[op], 50);
    o.measured_p95_ms = percentile(real_ms[op], 95);
    o.error_pct = signed_error_pct(o.simulated_median_ms, o.measured_median_ms);
    c.ops.push_back(o);
  }
  const sim::Summary s = sim::summarize(graph, simulated);
  const sim::Summary m = sim::summarize(graph, measured);
  c.simulated_iteration_ms = s.makespan_ms;
  c.measured_iteration_ms = m.makespan_ms;
  c.iteration_error_pct = signed_error_pct(c.simulated_iteration_ms, c.measured_iteration_ms);
  c.simulated_exposed_comm_ms = s.critical_rank.exposed_comm_ms;
  c.measured_exposed_comm_ms = m.critical_rank.exposed_comm_ms;
  return c;
}

}  // namespace moeplan::exec
