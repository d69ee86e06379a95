#pragma once
// `moeplan bench published`: every row of the published-runs table
// (io/published_runs.hpp) simulated at its exact configuration and compared
// with what its source measured (docs/validation.md). No constant is fitted
// to a row: this is the accuracy harness, reporting whatever it finds.

#include <optional>
#include <string>
#include <vector>

#include <moeplan/io/published_runs.hpp>
#include <moeplan/perf/benchmarks.hpp>

namespace moeplan::perf {

/// @brief One row: the measured and the predicted iteration, and memory where the source gave it.
struct PublishedPrediction {
  double measured_iteration_s = 0;
  double predicted_iteration_s = 0;
  double error_pct = 0;  ///< signed: (predicted - measured) / measured; negative is too fast
  double predicted_memory_gib = 0;
  std::optional<double> memory_error_pct;  ///< against the published peak allocation
  /// The predicted memory within what the GPU holds of tensors (cost::fits_in_memory):
  /// every row ran, so every row should.
  bool predicted_fits = false;
  /// Fits by less than the memory model's largest under-prediction (cost::tight_in_memory).
  bool predicted_tight = false;
};

/// @brief The table's summary (docs/validation.md says how each is counted).
struct PublishedSummary {
  std::size_t rows = 0;
  double median_abs_error_pct = 0;
  double mean_signed_error_pct = 0;
  /// Pairs of rows of one model, GPU type and count, sequence and batch that
  /// differ in their mapping, and of those the ones whose predicted order of
  /// iteration times is the measured order (measured ties are not pairs).
  std::size_t pairs = 0;
  std::size_t pairs_in_order = 0;
  /// Groups of such rows (at least two mappings): in how many the mapping
  /// predicted fastest is the one measured fastest (or ran as fast).
  std::size_t groups = 0;
  std::size_t groups_fastest_predicted = 0;
  /// @brief A group whose predicted-fastest row did not run fastest: the two
  /// rows and how much faster the model predicts its pick than the measured
  /// fastest (percent of that row's predicted time).
  struct GroupMiss {
    std::string measured_fastest;
    std::string predicted_fastest;
    double predicted_margin_pct = 0;
  };
  std::vector<GroupMiss> group_misses;
  std::size_t memory_rows = 0;
  double median_abs_memory_error_pct = 0;
  /// The rows predicted to fit in their GPU's memory, and the tight ones of them.
  std::size_t rows_predicted_to_fit = 0;
  std::vector<std::string> tight_rows;
};

/// Each run simulated as its scenario (references beside `table_path`), by
/// index: an input error names the table, the row's line and the field.
std::vector<PublishedPrediction> predict_published(const std::vector<io::PublishedRun>& runs,
                                                   const std::string& table_path);

/// The summary of `predictions` (one per run, in order).
PublishedSummary summarize_published(const std::vector<io::PublishedRun>& runs,
                                     const std::vector<PublishedPrediction>& predictions);

/// The table read, predicted and summarised: per row and the summary.
BenchReport bench_published(const std::string& table_path);

}  // namespace moeplan::perf
