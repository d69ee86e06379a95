#pragma once
// The GPU side of `calibrate --backend cuda`, behind a plain C++ interface so
// that the orchestration (MPI, progress, samples: cuda_calibration_run.cpp)
// compiles with the host compiler and the project's warnings. Implemented in
// cuda_calibration.cu. Every time is per repetition, from cudaEvents recorded
// around each launch on the timed stream, after `warmup` untimed launches.

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <moeplan/calibrate/cuda_calibration.hpp>
#include <moeplan/calibrate/host_calibration.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::calibrate::gpu {

/// run_cuda_calibration's work, in the CUDA plug-in (cuda_calibration_run.cpp).
HostCalibration run_calibration(const CudaCalibrationOptions& options);

/// CUDA devices visible to this process; 0 with `why` filled when none (no
/// driver, no device).
int device_count(std::string& why);

/// NCCL's unique id, as bytes to broadcast with MPI.
using UniqueId = std::array<char, 128>;
UniqueId nccl_unique_id();

/// @brief GEMMs beside a partner on another stream, and whether the partner
/// was still running when the last GEMM ended.
struct Beside {
  std::vector<double> gemm_ms;  ///< empty on ranks that only ran the partner
  bool covered = false;
};

/// @brief One GPU: cuBLAS handle, streams and buffers for the benchmarks.
class Bench {
 public:
  /// Uses device `device`; buffers are sized for `gemms` (and the overlap GEMM
  /// among them), the grouped shapes (experts x tokens, d_model, ffn) and
  /// casts of up to `cast_elements`.
  Bench(int device, const std::vector<GemmShape>& gemms, const std::vector<GroupedGemmShape>& grouped,
        std::size_t cast_elements);
  ~Bench();
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  /// "NVIDIA H100 80GB HBM3, 132 SMs".
  std::string device_name() const;
  int sm_count() const;
  std::vector<double> gemm_ms(const GemmShape& shape, const Repetitions& reps);
  /// Runs `shape` back to back for about `seconds`: clocks and temperature
  /// at the steady state of a training run before anything is timed.
  void warm_up(const GemmShape& shape, double seconds);
  std::vector<double> attention_ms(const AttentionShape& shape, const Repetitions& reps);
  /// The same product with E4M3 operands on cuBLASLt (bf16 out; cuda_ops::Fp8Gemm).
  std::vector<double> gemm_fp8_ms(const GemmShape& shape, const Repetitions& reps);
  /// `experts` products of `per_expert` each: one strided-batched launch
  /// (batched) or one launch per expert (a loop), as one timed repetition.
  std::vector<double> grouped_gemm_ms(const GemmShape& per_expert, int experts, bool batched, const Repetitions& reps);
  /// Transformer Engine's bf16 -> FP8 cast of `elements` (a multiple of 8): 3 bytes each.
  std::vector<double> cast_ms(std::size_t elements, const Repetitions& reps);

  /// Joins the NCCL communicator of `world` ranks.
  void init_nccl(const UniqueId& id, int world, int rank);
  /// One collective of nccl-tests `size` bytes (float): alltoall as grouped
  /// ncclSend/ncclRecv of size / world to every peer, allgather output size,
  /// reducescatter input size, allreduce size, p2p send size to the next rank
  /// while receiving from the previous one.
  std::vector<double> collective_ms(model::OpClass op, double size_bytes, const Repetitions& reps);

  /// Median time of one device-to-device copy of `bytes`, or of one ncclAllReduce of `bytes`.
  double copy_ms(std::size_t bytes);
  double allreduce_ms(std::size_t bytes);
  /// `count` copies (or allreduces) of `bytes` on the side stream; the timed
  /// GEMMs start once the first has ended (gemm null: the partner only).
  Beside gemm_beside_copies(const GemmShape& gemm, const Repetitions& reps, int count, std::size_t bytes);
  Beside gemm_beside_allreduce(const GemmShape* gemm, const Repetitions& reps, int count, std::size_t bytes);
  /// Median time of one copy kernel of `bytes` on `blocks` thread blocks
  /// (cuda_ops::copy_on_blocks: an NCCL kernel's footprint), and GEMMs beside `count` of them.
  double sm_copy_ms(std::size_t bytes, int blocks);
  Beside gemm_beside_sm_copies(const GemmShape& gemm, const Repetitions& reps, int count, std::size_t bytes,
                               int blocks);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moeplan::calibrate::gpu
