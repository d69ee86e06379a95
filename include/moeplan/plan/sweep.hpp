#pragma once
// A sweep's points (docs/cli.md, sweep): each grid point is a scenario whose
// family evaluates every requested schedule at the knobs its planner chooses
// (Family::sweep_point); the rows carry the speed-ups over none and tutel, and
// SweepSummary averages them per schedule. output/sweep_report.hpp writes the
// CSV and JSON; the CLI (in one process or sharded over MPI ranks) and the
// Python module build them from these functions.

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <moeplan/io/loader.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/family.hpp>

namespace moeplan::plan {

/// Each requested schedule (empty = the family's, less those the scenario's
/// knobs rule out) at its planned knobs, by the scenario's family; iteration
/// NaN where nothing runs (no mapping fits: the CSV leaves it empty). Input
/// error (field "schedules") for a requested schedule the family does not have.
std::vector<PointResult> evaluate_point(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                                        const std::vector<std::string>& schedules, unsigned threads = 1);

/// @brief One (grid point, schedule) of a sweep: a CSV row.
struct SweepRow {
  std::size_t point = 0;
  std::string scenario;
  std::vector<std::string> labels;  ///< one per sweep column (LoadedSweep::columns), "" where the axis does not apply
  Evaluation evaluation;
  double speedup_vs_none = NAN;   ///< NaN without a `none` row or with a zero-length iteration
  double speedup_vs_tutel = NAN;  ///< NaN without a `tutel` row
  model::PlanKnobs knobs;         ///< the knobs its planner chose
};

/// Every schedule the sweep names must belong to every base scenario's family:
/// input error (field schedules[N]) otherwise.
void check_sweep_schedules(const io::LoadedSweep& sweep);

/// Grid point `point` evaluated (evaluate_point on its scenario, under
/// `limits`), as rows. Input errors for a scenario with compute noise or no profile.
std::vector<SweepRow> evaluate_sweep_point(const io::LoadedSweep& sweep, std::size_t point,
                                           const model::RunLimits& limits);

/// @brief The per-schedule means over a sweep's rows, in the order schedules first appear.
class SweepSummary {
 public:
  /// @brief One schedule's means (NaN where no row had the baseline).
  struct Entry {
    std::string schedule;
    std::size_t points = 0;
    double mean_speedup_vs_none = NAN;
    double geomean_speedup_vs_none = NAN;
    double mean_speedup_vs_tutel = NAN;
  };
  void add(const std::string& schedule, double speedup_vs_none, double speedup_vs_tutel);
  std::vector<Entry> entries() const;

 private:
  struct Totals {
    std::size_t points = 0;
    double sum_none = 0, sum_log_none = 0, sum_tutel = 0;
    std::size_t n_none = 0, n_log_none = 0, n_tutel = 0;
  };
  std::vector<std::string> order_;
  std::vector<Totals> totals_;
};

}  // namespace moeplan::plan
