#pragma once
// Measure this machine and fit a cost profile: what `calibrate` writes and
// what `validate-hw --calibrate` measures before it replays.

#include <iosfwd>
#include <optional>
#include <string>

#include <moeplan/model/specs.hpp>

namespace moeplan::cli {

struct CalibrationRequest {
  std::string backend;  ///< host or cuda
  std::string output;   ///< the profile file; the points go to its .points.csv
  std::string name;     ///< profile name; empty: the output file's stem
  std::string cluster;  ///< the cluster the profile prices
  bool quick = false;
  std::string output_option = "-o";  ///< the option that named `output`, for errors
};

struct CalibratedProfile {
  model::CostProfileSpec profile;
  std::string textproto;  ///< the profile file's text, provenance comment included
  std::string points_path;
  std::string points_csv;
  std::string summary;  ///< one line per fitted line and overlap factor
};

/// Input errors (exit 2) before anything is measured; returns the profile name.
std::string check_calibration_request(const CalibrationRequest& request);

/// Runs the backend's microbenchmarks (progress on `err`) and fits the
/// profile. Under mpirun every process measures and only process 0 fits:
/// nullopt on the others. Measurements that make no plausible profile are a
/// runtime Error (exit 1: the machine was too busy to time).
std::optional<CalibratedProfile> calibrate_profile(const CalibrationRequest& request, std::ostream& err);

}  // namespace moeplan::cli
