#pragma once
// CUDA calibration (`moeplan calibrate --backend cuda`): the host backend's
// benchmarks on a GPU. cuBLAS bf16 GEMMs on the tensor cores, causal attention
// as block-causal batched GEMMs with a softmax kernel, the overlap slow-down
// beside NCCL (or, on one GPU, beside device-to-device copies), and NCCL
// collectives between MPI ranks, one GPU each. The result is the host
// backend's HostCalibration, so the same points CSV and the same fit
// (cost::fit_profile) make the profile (docs/cost-model.md, "CUDA calibration").
// Plain C++: the CUDA code lives in src/calibrate/cuda_calibration.cu, built
// only with CUDA and NCCL (MOEPLAN_CUDA_ENABLED) into the CUDA plug-in
// (hostrt/cuda_plugin.hpp), which run_cuda_calibration loads.

#include <cstddef>
#include <iosfwd>
#include <vector>

#include <moeplan/calibrate/host_calibration.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::calibrate {

/// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): busbw = algbw x
/// factor, algbw = size / time. allreduce 2 (n - 1) / n; allgather,
/// reducescatter and alltoall (n - 1) / n; p2p (sendrecv) 1. A group of one
/// moves nothing: 0. Only communication ops; gemm or attention: Error.
double bus_bandwidth_factor(model::OpClass op, int ranks);

/// The GPU GEMM grid: tokens x (d_model, expert ffn) of bundled models,
/// tokens outermost. quick: tokens {256, 2048, 16384} x {(256, 512),
/// (1024, 2048), (4096, 14336)}; full: tokens {16, 64, 256, 1024, 4096, 16384}
/// x {(256, 512) gpt2-tiny-moe, (512, 1024) bert-large-moe, (768, 1536)
/// gpt-moe-m, (1024, 2048) gpt-moe-l, (1600, 6400) gpt2-xl-moe, (3584, 2560)
/// qwen2-57b-a14b, (4096, 14336) mixtral-8x7b}.
std::vector<GemmShape> cuda_gemm_grid(bool quick);

/// The grouped-GEMM grid: a rank's local experts of bundled or published
/// models, each at three tokens per expert. quick: 8 experts of (1024, 2048)
/// at {256, 2048}; full: 4 of (4096, 14336) (Mixtral-8x7B at EP 2) at {512,
/// 2048, 8192}, 32 of (7168, 2048) (DeepSeek-V3 at EP 8) at {128, 512, 2048},
/// 64 of (2048, 1408) (Qwen1.5-MoE-A2.7B's 60 experts, rounded) at {128, 512, 2048}.
std::vector<GroupedGemmShape> cuda_grouped_grid(bool quick);

/// Elements of the bf16 -> FP8 casts (the elementwise line): powers of 4 from
/// 2^16 to 2^28 (quick: 2^20 and 2^24); 3 bytes moved per element.
std::vector<std::size_t> cuda_cast_elements(bool quick);

/// The tile the CUDA GEMM shape model rounds to: CUTLASS's tensor-core
/// default, 128 x 256 (the datasheet profiles' tile, cluster field gemm_tile_m/n).
inline constexpr std::int64_t kCudaGemmTileM = 128;
inline constexpr std::int64_t kCudaGemmTileN = 256;

/// The GPU attention grid, 16 heads: quick seq {1024, 4096} x head_dim {64, 128};
/// full seq {512, 1024, 2048, 4096, 8192, 16384} x head_dim {64, 128}.
std::vector<AttentionShape> cuda_attention_grid(bool quick);

/// Query rows per block of the block-causal attention: block b's scores cover
/// the keys up to its last query, so the computed pairs exceed the causal
/// L (L + 1) / 2 by at most L x (block - 1) / 2.
inline constexpr std::int64_t kAttentionQueryBlock = 256;

struct CudaCalibrationOptions {
  bool quick = false;
  std::ostream* progress = nullptr;  ///< one line per benchmark group (rank 0 only)
};

/// Runs every benchmark on this process's GPU (rank r uses device r mod the
/// device count), in the CUDA plug-in. Under mpirun with 2+ ranks (and MPI
/// built) the NCCL communicator is bootstrapped with MPI and the collectives
/// are measured. Runtime Error when no GPU is present or CUDA, cuBLAS, NCCL or
/// MPI fails; the plug-in's errors (hostrt::cuda_plugin) when it is not
/// installed (input, field request.backend) or does not load (runtime).
HostCalibration run_cuda_calibration(const CudaCalibrationOptions& options);

}  // namespace moeplan::calibrate
