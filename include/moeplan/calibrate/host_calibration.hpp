#pragma once
// Host calibration (`moeplan calibrate --backend host`): microbenchmarks of
// this machine's CPU (Eigen GEMMs, block-causal attention), the slow-down of a
// GEMM while a communication stand-in runs beside it, and, between MPI
// processes, the five collectives. The timings become model::TimingSample,
// fitted by cost::fit_profile like `moeplan fit` (docs/cost-model.md, "Host
// calibration").

#include <optional>

#include <moeplan/cost/attention_shape.hpp>
#include <moeplan/cost/gemm_shape_fit.hpp>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/core/median.hpp>

#include <moeplan/core/launch.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::calibrate {

/// @brief One GEMM: [tokens x d_model] x [d_model x ffn], float32.
struct GemmShape {
  std::int64_t tokens = 0;
  std::int64_t d_model = 0;
  std::int64_t ffn = 0;
};

/// 2 m n k: one multiply and one add per term.
double gemm_flops(const GemmShape& shape);

/// The GEMM grid (docs/cost-model.md, "Host calibration"): tokens x d_model x ffn,
/// tokens outermost, ffn innermost. quick: {16, 64, 256} x {256} x {512, 1024};
/// full: {16, 64, 256, 1024} x {256, 512} x {512, 2048}.
std::vector<GemmShape> gemm_grid(bool quick);

/// @brief One causal self-attention core over a seq_len-token context: its
/// last `queries` queries (0: all seq_len of them, a whole sequence), per head.
struct AttentionShape {
  std::int64_t seq_len = 0;
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t queries = 0;
  std::int64_t query_count() const { return queries > 0 ? queries : seq_len; }
};

/// The cost model's causal rule, cost::attention_core_flops with l = queries, c = seq_len.
double attention_flops(const AttentionShape& shape);

/// quick: seq {128, 256, 512} x head_dim {32, 64}, 4 heads;
/// full: seq {128, 256, 512, 1024, 2048} x head_dim {32, 64}, 4 heads, and
/// slices (FoldMoE's): the last 128 of 512 and the last 256 of 1,024 tokens at
/// head_dim 64. Two head sizes keep the shape model's matmul and score terms
/// apart (cost/attention_shape.hpp).
std::vector<AttentionShape> attention_grid(bool quick);

/// Collective sizes in bytes (nccl-tests' "size"): quick 16 KiB .. 1 MiB in x4
/// steps, full 4 KiB .. 2 MiB in x2 steps.
std::vector<double> message_sizes(bool quick);

/// Where the points go: the profile path with its extension replaced by
/// ".points.csv" ("out/host.textproto" -> "out/host.points.csv").
std::string points_path(const std::string& profile_path);

/// @brief Repetitions of each timing.
struct Repetitions {
  int warmup = 0;
  int timed = 0;
};
Repetitions repetitions(bool quick);

/// @brief The overlap measurement: one GEMM timed alone and beside a stand-in
/// communication kernel.
struct OverlapMeasurement {
  GemmShape gemm;
  double alone_ms = 0;          ///< median alone
  double with_ms = 0;           ///< median beside the partner
  double slowdown = 1;          ///< max(1, with / alone)
  std::string partner;          ///< what ran beside it
};

/// @brief The converse: one collective timed alone and while GEMMs run on every rank.
struct CommOverlapMeasurement {
  double size_bytes = 0;
  double alone_ms = 0;   ///< median alone
  double with_ms = 0;    ///< median while every rank's compute thread runs GEMMs in a loop
  double slowdown = 1;   ///< max(1, with / alone): the profile's overlap_comm_slowdown
  std::string partner;   ///< what ran beside it
};

struct HostCalibrationOptions {
  bool quick = false;
  std::ostream* progress = nullptr;  ///< one line per benchmark group (rank 0 only)
};

/// @brief A rank's local experts as one grouped GEMM: `experts` products of
/// `per_expert` (its tokens that expert's).
struct GroupedGemmShape {
  int experts = 1;
  GemmShape per_expert;
};

/// @brief A grouped GEMM timed both ways (CUDA backend): one batched launch
/// against a loop of one launch per expert (medians, ms).
struct GroupedGemmPoint {
  GroupedGemmShape shape;
  double batched_ms = 0;
  double loop_ms = 0;
};

/// @brief What a calibration measured (complete on rank 0 only).
struct HostCalibration {
  std::vector<model::TimingSample> samples;
  /// The GEMM samples with their shapes, for the shape model's fit.
  std::vector<cost::GemmPoint> gemm_points;
  /// The FP8 GEMM samples with their shapes (CUDA backend): the shape model's FP8 peak.
  std::vector<cost::GemmPoint> gemm_points_fp8;
  /// The shape model's units and tile for gemm_points: 0 for the host
  /// backend's (1 core, Eigen's micro-kernel); the CUDA backend sets its own.
  std::int64_t gemm_units = 0;
  std::int64_t gemm_tile_m = 0;
  std::int64_t gemm_tile_n = 0;
  /// Grouped GEMMs, batched against looped (CUDA backend; the points CSV's comments).
  std::vector<GroupedGemmPoint> grouped_points;
  /// The attention samples with their shapes, for the attention shape model's fit.
  std::vector<cost::AttentionPoint> attention_points;
  /// Query rows per block of the attention kernel that measured them (host 64, cuda 256).
  std::int64_t attention_block_rows = 0;
  /// Memory bandwidth, read + write bytes / time: the median copy of a 64 MiB
  /// buffer (host backend), the largest bf16 -> FP8 cast (CUDA backend).
  double memory_bytes_per_s = 0;
  /// The profile's: beside the MPI_Allreduce loop under mpirun with 2+ ranks, else beside the copy loop.
  OverlapMeasurement overlap;
  std::vector<OverlapMeasurement> overlap_measurements;  ///< every one made, copy loop first
  /// Communication beside compute (under mpirun with 2+ ranks only): the profile's overlap_comm_slowdown.
  std::optional<CommOverlapMeasurement> comm_overlap;
  int world_size = 1;
  int rank = 0;
  bool mpi_built = false;       ///< MOEPLAN_WITH_MPI at build time
  bool collectives_measured = false;
  std::string note;             ///< why no collective lines, when none
  std::string backend = "host"; ///< the --backend that measured it (cuda_calibration.hpp also fills these)
  std::string device;           ///< what was measured, e.g. the GPU's name ("" on the host)
};

using moeplan::launched_by_mpirun;  // core/launch.hpp

/// Runs every benchmark. Under mpirun (and with MPI built), initialises MPI,
/// measures the collectives between the ranks, and finalises it; compute runs
/// on rank 0 while the other ranks wait without spinning.
HostCalibration run_host_calibration(const HostCalibrationOptions& options);

/// The GEMM shape model fitted to a calibration's GEMM points
/// (docs/cost-model.md, "GEMM shape model"). Host backend: units 1 (Eigen runs
/// a product on one core), tiles of Eigen's register micro-kernel for float
/// (gebp_traits mr x nr). CUDA backend: the GPU's SMs and the tile it names
/// (gemm_units, gemm_tile_m/n), and an FP8 peak from its FP8 points. Both: the
/// measured memory bandwidth, peak = cost::highest_tile_rate of the points;
/// efficiency and alpha by cost::fit_gemm_shape. Absent without GEMM points or bandwidth.
std::optional<model::GemmShapeModelSpec> calibrated_gemm_shape(const HostCalibration& calibration);

/// The attention shape model fitted to a calibration's attention points
/// (docs/cost-model.md, "Attention shape model"), either backend: block_rows
/// of the kernel that measured them, alpha and the two per-unit times by
/// cost::fit_attention_shape. Absent without attention points.
std::optional<model::AttentionShapeModelSpec> calibrated_attention_shape(const HostCalibration& calibration);

/// The points as `moeplan fit` reads them (op,link,group,size,time_ms), with
/// the overlap measurement as comment lines; numbers in shortest round-trip form.
std::string points_csv(const HostCalibration& calibration);

}  // namespace moeplan::calibrate
