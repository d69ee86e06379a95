#pragma once
// The GPU work the CUDA calibration and the CUDA executor share: status checks
// that throw moeplan::Error (Runtime), a fill kernel, a bf16 tensor-core GEMM
// and block-causal attention. Included only by .cu files (CUDA headers).

#include <cstddef>
#include <cstdint>
#include <utility>

#include <cublas_v2.h>
#include <cuda_bf16.h>
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
