#pragma once
// The table of published, measured training runs (tests/data/published-runs.tsv,
// docs/validation.md): one row per run, with the scenario that expresses it
// exactly and the value its source measured. `moeplan bench published` reads
// it, simulates each row and compares.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/io/loader.hpp>

namespace moeplan::io {

/// @brief One measured run: what ran, where, how it was mapped, and what was measured.
struct PublishedRun {
  std::string id;      ///< the source table's id (S1-01, ...)
  std::string source;  ///< repository and path (or paper and table) of the measurement
  std::string model;   ///< the model as the source names it; rows of one model are ranked against each other
  std::string model_ref, cluster_ref, profile_ref;  ///< resolved beside the table, then bundled
  std::vector<Override> overrides;                  ///< the `set` cell: `field=value;...` (truncated models, routing)
  std::int64_t gpus = 0, gpus_per_node = 0;
  std::int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1, dp = 1;
  std::int64_t seq = 0, global_batch = 0, micro_batch = 0;
  std::string precision;  ///< workload.precision's name: bf16 or an FP8 recipe
  std::string recompute;  ///< the short form (model/recompute.hpp): none, selective[:MODULES], full[:METHOD:LAYERS]
  std::string family;     ///< the schedule family that expresses the run (folding: Megatron-Core)
  std::string metric;     ///< iteration_s or tokens_per_s_per_gpu
  double value = 0;       ///< as measured, in the metric's unit
  std::optional<double> peak_alloc_gib;  ///< the run's measured peak allocation, when published
  std::string notes;                     ///< caveats of the source, kept beside the facts
  int line = 0;                          ///< in the table, for errors

  /// The measured iteration in seconds (tokens per second per GPU converted
  /// with the row's global batch, sequence and GPU count).
  double measured_iteration_s() const;
  /// The scenario text that expresses the run (its references resolve beside the table).
  std::string scenario_text() const;
};

/// The most rows a table holds: 10,000 (the source table has 133).
inline constexpr std::size_t kMaxPublishedRuns = 10000;

/// Reads the table: a header naming the columns, then one tab-separated row per
/// run, `#` lines skipped. Input errors name the file, line and column.
std::vector<PublishedRun> read_published_runs(const std::string& path);

/// The bundled table, tests/data/published-runs.tsv under the data root.
std::string bundled_published_runs();

}  // namespace moeplan::io
