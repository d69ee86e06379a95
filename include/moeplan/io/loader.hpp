#pragma once
// Loading moeplan's input files: finding bundled files by name, parsing,
// resolving a scenario's references, applying --set overrides, and validating.
// Every input error comes back as moeplan::Error located in the right file.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/core/error.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::io {

enum class FileKind { Model, Cluster, Profile, Scenario, Plan, Sweep };

const char* to_string(FileKind kind);

/// The folder bundled files live under (MOEPLAN_DATA_DIR, else the source tree).
std::string data_root();

/// A path as given if it names a file; else the bundled file of that kind and name.
/// For files named on the command line (relative paths are relative to the CWD).
std::string resolve_path(FileKind kind, const std::string& name_or_path);

/// Where a reference written in referencing_file (a scenario's model_ref,
/// cluster_ref or profile_ref, a sweep's scenarios) points. An absolute path is
/// used as given. A relative one is tried, in order: in the referencing file's
/// folder (a bare name also with ".textproto" added); as given, relative to the
/// CWD (the rule before references resolved beside their file); and, for a bare
/// name, the bundled file of that kind. A candidate whose "# proto-message:"
/// header names another kind is passed over. An empty referencing_file (a
/// reference given with --set) skips the first step. The error lists every path tried.
std::string resolve_reference_path(FileKind kind, const std::string& ref, const std::string& referencing_file);

/// The kind a file holds: from a "# proto-message: Model" header line, else
/// from the folder it is in (models/, clusters/, profiles/, sweeps/, plans/, scenarios/).
FileKind detect_kind(const std::string& path);

/// @brief One "--set field.path=value" override of a scenario's scalar field.
struct Override {
  std::string field;
  std::string value;
  /// Where it was written, for errors: empty = the command line ("--set"); a
  /// sweep's axis value names the sweep file, its line and origin_field.
  SourceLocation origin = {};
  std::string origin_field = {};  ///< e.g. "axes[1].values[2]"
};
/// Splits "field.path=value"; a missing '=' is an input error.
Override parse_override(const std::string& text);

model::ModelSpec load_model(const std::string& name_or_path);
model::ClusterSpec load_cluster(const std::string& name_or_path);
model::CostProfileSpec load_profile(const std::string& name_or_path);
model::ScenarioSpec load_scenario(const std::string& name_or_path, const std::vector<Override>& overrides = {});

/// The same loads on text already in memory, said to come from path (where errors are located);
/// a scenario's references are still resolved by name or path. For fuzzing and tests.
model::ModelSpec load_model_text(const std::string& path, const std::string& text);
model::ClusterSpec load_cluster_text(const std::string& path, const std::string& text);
model::CostProfileSpec load_profile_text(const std::string& path, const std::string& text);
model::ScenarioSpec load_scenario_text(const std::string& path, const std::string& text,
                                       const std::vector<Override>& overrides = {});

/// @brief One point of a sweep grid: a base scenario and the overrides that make it.
struct SweepPoint {
  std::string scenario;
  std::vector<Override> overrides;
  std::vector<std::pair<std::string, std::string>> labels;  ///< axis name -> value, for CSV columns
};

/// @brief One axis of a sweep as written: its CSV column and its values.
struct SweepAxis {
  std::string field;   ///< the scalar field set, or empty when values are "field.path=value;..."
  std::string column;  ///< CSV column: the field, or "axisN"
  std::vector<std::string> values;
  std::vector<SourceLocation> value_lines;  ///< where each value is written
  std::size_t index = 0;                    ///< position among the file's axes, for "axes[N]"
};

/// @brief A base scenario and the axes that apply to it.
struct SweepBase {
  std::string scenario;         ///< as loaded: beside the sweep, else as written
  std::vector<std::size_t> axes;  ///< into LoadedSweep::axes, in file order
  std::size_t points = 1;        ///< product of those axes' value counts
};

/// The most grid points a sweep may have unless the caller allows more: each
/// point is one simulation per schedule, and validate loads every one.
/// 16,384 is 5.6x the largest bundled sweep (fsmoe-table4: 2 x 1458 points);
/// docs/reliability.md gives the time per point that this bounds.
inline constexpr std::size_t kDefaultMaxSweepPoints = 16384;

/// @brief A loaded sweep. The grid is not held in memory: point(i) makes the
/// i-th point from the axes (base scenarios in order, within each the last
/// axis varying fastest), so memory stays that of the file however many
/// points the axes multiply to.
struct LoadedSweep {
  std::string name;
  std::string path;                    ///< the file it was read from
  std::vector<std::string> schedules;  ///< empty = all that apply
  std::vector<std::string> columns;    ///< axis names, in order, for the CSV header
  std::vector<SweepAxis> axes;
  std::vector<SweepBase> bases;

  std::size_t size() const;  ///< grid points in all
  /// The i-th grid point (i < size()).
  SweepPoint point(std::size_t i) const;
};

/// Reads a sweep and checks its grid (the cartesian product of the axes that
/// apply to each base scenario). A grid of more than max_points points is an
/// input error that gives its size.
LoadedSweep load_sweep(const std::string& name_or_path, std::size_t max_points = kDefaultMaxSweepPoints);
/// load_sweep on text already in memory, said to come from path.
LoadedSweep load_sweep_text(const std::string& path, const std::string& text,
                            std::size_t max_points = kDefaultMaxSweepPoints);
/// Loads one grid point's scenario. An error the overrides cause is blamed on
/// the axis value that causes it (sweep file, line, "axes[A].values[V]"), also
/// when it shows in a referenced file (a d_model that heads do not divide).
model::ScenarioSpec load_sweep_point(const SweepPoint& point);

/// @brief What validating one file found.
struct ValidatedFile {
  FileKind kind = FileKind::Model;
  std::optional<model::ModelSpec> model;
  std::optional<model::ScenarioSpec> scenario;
};
/// A path as given if it names a file; else the bundled file of that name, of any kind.
std::string resolve_any_path(const std::string& name_or_path);

/// Loads and checks a file of any kind (overrides: scenarios only); throws the first error found.
ValidatedFile validate_file(const std::string& name_or_path, const std::vector<Override>& overrides = {});

}  // namespace moeplan::io
