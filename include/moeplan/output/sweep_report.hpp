#pragma once
// What `moeplan sweep` prints besides its CSV (output/sweep_csv.hpp): the rows
// as JSON objects and the per-schedule summary `--json` prints (docs/cli.md,
// sweep). The CLI and the Python module build both from these functions.

#include <cstddef>
#include <string>
#include <vector>

#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/plan/sweep.hpp>

namespace moeplan::output {

/// Rows as JSON objects with the CSV's columns as keys (numbers as numbers,
/// null where the CSV cell is empty).
io::Json sweep_rows_to_json(const io::LoadedSweep& sweep, const std::vector<plan::SweepRow>& rows);

/// `sweep --json`: schedule, points, mean_speedup_vs_none, geomean_speedup_vs_none, mean_speedup_vs_tutel.
io::Json sweep_summary_to_json(const plan::SweepSummary& summary);

/// The summary a person reads: "sweep NAME: P points x S schedules on RAN_ON
/// in W s", then each schedule's mean speed-ups.
std::string sweep_summary_to_text(const std::string& sweep, std::size_t points, const plan::SweepSummary& summary,
                                  const std::string& ran_on, double wall_s);

}  // namespace moeplan::output
