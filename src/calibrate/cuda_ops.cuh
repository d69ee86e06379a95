#pragma once
// The GPU work the CUDA calibration and the CUDA executor share: status checks
// that throw moeplan::Error (Runtime), a fill kernel, a bf16 tensor-core GEMM
// and block-causal attention. Included only by .cu files (CUDA headers).

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <nccl.h>

namespace moeplan::cuda_ops {

void check(cudaError_t status, const char* what);
void check(cublasStatus_t status, const char* what);
void check(ncclResult_t status, const char* what);

/// A CUDA event, destroyed with it (timing and cross-stream waits).
class Event {
 public:
  Event() { check(cudaEventCreate(&event_), "cudaEventCreate"); }
  ~Event() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// Milliseconds between two recorded events.
inline double elapsed_ms(const Event& from, const Event& to) {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, from.get(), to.get()), "cudaEventElapsedTime");
  return static_cast<double>(ms);
}

/// Device memory, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Fills with values in [-0.05, 0.05) from a hash of the index: GEMMs of
/// zeros draw less power and could run faster than real ones.
void fill_bf16(__nv_bfloat16* data, std::size_t count, cudaStream_t stream);

/// C [m x n] = A [m x k] B [k x n], row-major bf16, fp32 accumulation on the
/// tensor cores (CUBLAS_COMPUTE_32F), on the handle's stream.
void gemm_bf16(cublasHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k, const __nv_bfloat16* a,
               const __nv_bfloat16* b, __nv_bfloat16* c);

/// `count` independent products of that shape in one launch
/// (cublasGemmStridedBatchedEx), the operands of product i at i times the
/// shape's size: the one-launch grouped GEMM Megatron-Core runs for a rank's
/// local experts (--moe-grouped-gemm), for experts of equal token counts.
void gemm_bf16_batched(cublasHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t count,
                       const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c);

/// Fills with FP8 E4M3 bytes from the same hash, never NaN (0x7f, 0xff).
void fill_fp8(__nv_fp8_e4m3* data, std::size_t count, cudaStream_t stream);

/// @brief cuBLASLt's FP8 GEMM: C [m x n] bf16 = A [m x k] W^T with W [n x k]
/// (a linear layer's weight as stored), both E4M3, fp32 accumulation, unit
/// scales. Hopper's FP8 GEMMs take only this "TN" layout (cuBLAS docs,
/// cublasLtMatmul: FP8 requires A transposed and B not, column-major). The
/// descriptors and algorithm are made once per shape and kept: made per call,
/// the host's work between launches would idle the GPU inside the timings.
class Fp8Gemm {
 public:
  explicit Fp8Gemm(std::size_t workspace_bytes = std::size_t{32} << 20);
  ~Fp8Gemm();
  Fp8Gemm(const Fp8Gemm&) = delete;
  Fp8Gemm& operator=(const Fp8Gemm&) = delete;
  void run(std::int64_t m, std::int64_t n, std::int64_t k, const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* w,
           __nv_bfloat16* c, cudaStream_t stream);

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t w = nullptr, a = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  const Plan& plan(std::int64_t m, std::int64_t n, std::int64_t k);
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, Plan> plans_;
};

/// Transformer Engine's cast: y = fp8(x * scale), 8 elements per thread
/// (16-byte loads, 8-byte stores); count a multiple of 8. Moves 3 bytes per element.
void cast_bf16_to_fp8(const __nv_bfloat16* x, __nv_fp8_e4m3* y, std::size_t count, float scale, cudaStream_t stream);

/// A copy kernel on `blocks` thread blocks only: the one-GPU stand-in for an
/// NCCL kernel, which runs on a few SMs (one block per channel) beside the GEMMs.
void copy_on_blocks(const void* from, void* to, std::size_t bytes, int blocks, cudaStream_t stream);

/// @brief One causal attention core and the buffers it needs.
struct AttentionShapeGpu {
  std::int64_t queries = 0;  ///< the last `queries` of `context` tokens attend
  std::int64_t context = 0;
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
};

/// Query rows per block; see calibrate::kAttentionQueryBlock.
inline constexpr std::int64_t kQueryBlock = 256;

/// Bytes of each buffer: q and o [heads x queries x head_dim], k and v
/// [heads x context x head_dim] (bf16), scores [heads x block x context]
/// (fp32), probabilities (bf16, same shape).
struct AttentionBuffers {
  DeviceBuffer q, k, v, o, scores, probs;
  explicit AttentionBuffers(const AttentionShapeGpu& shape);
};

/// Block-causal attention: for each block of kQueryBlock queries, scores =
/// Q K^T / sqrt(head_dim) over the keys up to the block's last query (one
/// strided-batched GEMM over heads, fp32 out), a masked row softmax kernel, and
/// O = P V (a second batched GEMM). On the handle's stream.
void attention_bf16(cublasHandle_t handle, cudaStream_t stream, const AttentionShapeGpu& shape,
                    AttentionBuffers& buffers);

}  // namespace moeplan::cuda_ops
