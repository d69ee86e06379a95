#include <moeplan/output/sweep_report.hpp>

#include <cmath>

#include <fmt/format.h>

namespace moeplan::output {

std::string sweep_summary_to_text(const std::string& sweep, std::size_t points, const plan::SweepSummary& summary,
                                  const std::string& ran_on, double wall_s) {
  const std::vector<plan::SweepSummary::Entry> entries = summary.entries();
  std::string out = fmt::format("sweep {}: {} points x {} schedules on {} in {:.2f} s\n", sweep, points,
                                entries.size(), ran_on, wall_s);
  auto ratio_text = [](double value) { return std::isfinite(value) ? fmt::format("{:.3f}x", value) : "n/a"; };
  for (const plan::SweepSummary::Entry& e : entries)
    out += fmt::format("  {:<14} mean speed-up {} vs none (geomean {}), {} vs tutel\n", e.schedule,
                       ratio_text(e.mean_speedup_vs_none), ratio_text(e.geomean_speedup_vs_none),
                       ratio_text(e.mean_speedup_vs_tutel));
  return out;
}

}  // namespace moeplan::output
