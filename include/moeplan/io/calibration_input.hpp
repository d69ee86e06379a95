#pragma once
// Reading microbenchmark timings: moeplan's CSV (op,link,group,size,time_ms)
// and raw nccl-tests output. Every sample remembers its file and line so a
// fit that refuses it can say where it came from.

#include <optional>
#include <string>
#include <vector>

#include <moeplan/model/specs.hpp>

namespace moeplan::io {

/// @brief What nccl-tests output does not say about itself.
struct NcclTestsOptions {
  std::optional<model::OpClass> op;      ///< else from "# Collective test starting:" or the file name
  std::optional<model::LinkClass> link;  ///< else intra if every rank is on one host
  std::optional<std::int64_t> group;     ///< else the number of "#  Rank" lines
  bool use_in_place = false;             ///< fit in-place instead of out-of-place times
};

std::vector<model::TimingSample> read_timing_csv(const std::string& file, const std::string& text);
std::vector<model::TimingSample> read_nccl_tests(const std::string& file, const std::string& text,
                                                 const NcclTestsOptions& options);
/// Reads a file of either format, told apart by its content.
std::vector<model::TimingSample> read_calibration_file(const std::string& path, const NcclTestsOptions& options);

}  // namespace moeplan::io
