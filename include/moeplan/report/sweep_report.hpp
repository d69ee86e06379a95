#pragma once
// What `moeplan sweep` writes: one CSV row per (grid point, schedule) and the
// per-schedule summary `--json` prints (docs/cli.md, sweep). The CLI (in one
// process or sharded over MPI ranks) and the Python module build both from
// these functions, so they report the same rows and means.

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/plan/sweep.hpp>

namespace moeplan::report {

/// @brief One (grid point, schedule) of a sweep: a CSV row.
struct SweepRow {
  std::size_t point = 0;
  std::string scenario;
  std::vector<std::string> labels;  ///< one per sweep column (LoadedSweep::columns), "" where the axis does not apply
  plan::Evaluation evaluation;
  double speedup_vs_none = NAN;   ///< NaN without a `none` row or with a zero-length iteration
  double speedup_vs_tutel = NAN;  ///< NaN without a `tutel` row
  plan::PlannedKnobs knobs;
};

/// Every schedule the sweep names must belong to every base scenario's family:
/// input error (field schedules[N]) otherwise.
void check_sweep_schedules(const io::LoadedSweep& sweep);

/// Grid point `point` evaluated (plan::evaluate_point on its scenario, under
/// `limits`), as rows. Input errors for a scenario with compute noise or no profile.
std::vector<SweepRow> evaluate_sweep_point(const io::LoadedSweep& sweep, std::size_t point,
                                           const model::RunLimits& limits);

/// The CSV header line, and rows as CSV lines (empty cells where a number is not finite).
std::string sweep_csv_header(const io::LoadedSweep& sweep);
std::string sweep_csv_rows(const std::vector<SweepRow>& rows);

/// Rows as JSON objects with the CSV's columns as keys (numbers as numbers,
/// null where the CSV cell is empty).
io::Json sweep_rows_to_json(const io::LoadedSweep& sweep, const std::vector<SweepRow>& rows);

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
  /// `sweep --json`: schedule, points, mean_speedup_vs_none, geomean_speedup_vs_none, mean_speedup_vs_tutel.
  io::Json to_json() const;

 private:
  struct Totals {
    std::size_t points = 0;
    double sum_none = 0, sum_log_none = 0, sum_tutel = 0;
    std::size_t n_none = 0, n_log_none = 0, n_tutel = 0;
  };
  std::vector<std::string> order_;
  std::vector<Totals> totals_;
};

}  // namespace moeplan::report
