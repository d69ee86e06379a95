#pragma once
// A sweep's CSV (docs/cli.md, "sweep"), writer and reader side by side: one
// row per (grid point, schedule), written by `moeplan sweep -o F.csv` (in one
// process or gathered from MPI ranks), read back for the report's pictures of
// a sweep (issue 18 item 2): the axes are the columns between `scenario` and
// `schedule`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/io/loader.hpp>
#include <moeplan/plan/sweep.hpp>

namespace moeplan::output {

/// The CSV header line.
std::string sweep_csv_header(const io::LoadedSweep& sweep);
/// Rows as CSV lines (empty cells where a number is not finite). The knob
/// columns: grad_partition_bytes (the plan's partition summed), degree_forward
/// and degree_backward (FSMoE's per phase, else the schedule's degree),
/// ar_chunk_bytes (0 where none), mapping ("tp1-cp4-...-mb1" or empty).
std::string sweep_csv_rows(const std::vector<plan::SweepRow>& rows);

/// @brief One row read back: one schedule at one grid point.
struct SweepCsvRow {
  std::int64_t point = 0;
  std::string scenario;
  std::vector<std::string> axis_values;  ///< one per SweepTable::axes
  std::string schedule;
  /// Empty where the cell is empty (the sweep writes no number that is not finite).
  std::optional<double> iteration_ms, compute_ms, exposed_comm_ms, speedup_vs_none, speedup_vs_tutel;
};

/// @brief A sweep's CSV as rows.
struct SweepTable {
  std::string path;
  std::vector<std::string> axes;  ///< axis columns, in order
  std::vector<SweepCsvRow> rows;  ///< in file order
};

/// Parses CSV text (RFC 4180 quoting, as `sweep` writes cells with commas or
/// quotes) said to come from `path`. Input errors name the path, the line and
/// the column: no header, a header without point, scenario, schedule,
/// iteration_ms, speedup_vs_none and speedup_vs_tutel (scenario before
/// schedule), a row whose cell count is not the header's, a cell that is not
/// a finite decimal number where one belongs (point: a whole number >= 0), an
/// unterminated quote, no rows.
SweepTable parse_sweep_csv(const std::string& path, const std::string& text);

/// Reads and parses a file, bounded as every input file is (a regular file of at most 64 MiB).
SweepTable read_sweep_csv(const std::string& path);

}  // namespace moeplan::output
