#include "cuda_ops.cuh"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include <moeplan/core/error.hpp>

namespace moeplan::cuda_ops {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(ErrorKind::Runtime, std::string("CUDA: ") + what + ": " + cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorKind::Runtime, std::string("cuBLAS: ") + what + ": " + cublasGetStatusString(status));
}

void check(ncclResult_t status, const char* what) {
  if (status != ncclSuccess)
    throw Error(ErrorKind::Runtime, std::string("NCCL: ") + what + ": " + ncclGetErrorString(status));
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) check(cudaMalloc(&data_, bytes), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);  // a failure here has nobody to report to
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

namespace {

__global__ void fill_kernel(__nv_bfloat16* data, std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    // A 32-bit integer hash (Wellons' "lowbias32"): uniform bits, no state.
    unsigned int x = static_cast<unsigned int>(i * 2654435761u);
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    data[i] = __float2bfloat16((static_cast<float>(x & 0xffffu) / 65536.0f - 0.5f) * 0.1f);
  }
}

__device__ unsigned int lowbias32(unsigned int x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

__global__ void fill_fp8_kernel(unsigned char* data, std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    // Bits 3 and 6 cleared: exponent below all-ones, so never NaN; |v| < 2.
    data[i] = static_cast<unsigned char>(lowbias32(static_cast<unsigned int>(i * 2654435761u)) & 0xb7u);
  }
}

__global__ void cast_kernel(const uint4* x, uint2* y, std::size_t vectors, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < vectors;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 in = x[i];
    const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(&in);
    uint2 out;
    unsigned char* o = reinterpret_cast<unsigned char*>(&out);
    for (int j = 0; j < 8; ++j) o[j] = __nv_fp8_e4m3(__bfloat162float(h[j]) * scale).__x;
    y[i] = out;
  }
}

__global__ void copy_kernel(const uint4* from, uint4* to, std::size_t vectors) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < vectors;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    to[i] = from[i];
}

__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Block-wide reduction through shared memory (blockDim.x a multiple of 32, <= 1024).
template <bool Max>
__device__ float block_reduce(float v, float* shared) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  v = Max ? warp_max(v) : warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  float w = lane < warps ? shared[lane] : (Max ? -INFINITY : 0.0f);
  w = Max ? warp_max(w) : warp_sum(w);
  __syncthreads();  // shared is reused by the next reduction
  return w;
}

// One block per (query row, head): probabilities of the row's visible keys
// (those at or before the query's position), zero for the masked rest.
__global__ void causal_softmax_kernel(const float* scores, __nv_bfloat16* probs, int keys, long long first_visible,
                                      long long head_stride) {
  __shared__ float shared[32];
  const long long row = blockIdx.x;
  const long long offset = blockIdx.y * head_stride + row * keys;
  const float* s = scores + offset;
  __nv_bfloat16* p = probs + offset;
  const int visible = static_cast<int>(first_visible + row);
  float top = -INFINITY;
  for (int j = threadIdx.x; j < visible; j += blockDim.x) top = fmaxf(top, s[j]);
  top = block_reduce<true>(top, shared);
  float sum = 0.0f;
  for (int j = threadIdx.x; j < visible; j += blockDim.x) sum += __expf(s[j] - top);
  sum = block_reduce<false>(sum, shared);
  const float inverse = 1.0f / sum;
  for (int j = threadIdx.x; j < keys; j += blockDim.x)
    p[j] = __float2bfloat16(j < visible ? __expf(s[j] - top) * inverse : 0.0f);
}

int to_int(std::int64_t v, const char* what) {
  if (v < 0 || v > 2147483647LL) throw Error(ErrorKind::Runtime, std::string("cuBLAS: ") + what + " exceeds int");
  return static_cast<int>(v);
}

}  // namespace

void fill_bf16(__nv_bfloat16* data, std::size_t count, cudaStream_t stream) {
  if (count == 0) return;
  fill_kernel<<<1024, 256, 0, stream>>>(data, count);
  check(cudaGetLastError(), "fill kernel launch");
}

void gemm_bf16(cublasHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k, const __nv_bfloat16* a,
               const __nv_bfloat16* b, __nv_bfloat16* c) {
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A B is column-major C^T (n x m) = B^T (n x k) A^T (k x m).
  check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, to_int(n, "n"), to_int(m, "m"), to_int(k, "k"), &alpha, b,
                     CUDA_R_16BF, to_int(n, "n"), a, CUDA_R_16BF, to_int(k, "k"), &beta, c, CUDA_R_16BF, to_int(n, "n"),
                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
}

void gemm_bf16_batched(cublasHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t count,
                       const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c) {
  if (count == 1) return gemm_bf16(handle, m, n, k, a, b, c);
  const float alpha = 1.0f, beta = 0.0f;
  check(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, to_int(n, "n"), to_int(m, "m"), to_int(k, "k"),
                                   &alpha, b, CUDA_R_16BF, to_int(n, "n"), k * n, a, CUDA_R_16BF, to_int(k, "k"), m * k,
                                   &beta, c, CUDA_R_16BF, to_int(n, "n"), m * n, to_int(count, "count"),
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx (grouped)");
}

void fill_fp8(__nv_fp8_e4m3* data, std::size_t count, cudaStream_t stream) {
  if (count == 0) return;
  fill_fp8_kernel<<<1024, 256, 0, stream>>>(reinterpret_cast<unsigned char*>(data), count);
  check(cudaGetLastError(), "fill kernel launch");
}

Fp8Gemm::Fp8Gemm(std::size_t workspace_bytes) : workspace_(workspace_bytes) {
  check(cublasLtCreate(&handle_), "cublasLtCreate");
}

Fp8Gemm::~Fp8Gemm() {
  for (auto& [shape, p] : plans_) {
    if (p.c != nullptr) cublasLtMatrixLayoutDestroy(p.c);
    if (p.a != nullptr) cublasLtMatrixLayoutDestroy(p.a);
    if (p.w != nullptr) cublasLtMatrixLayoutDestroy(p.w);
    if (p.op != nullptr) cublasLtMatmulDescDestroy(p.op);
  }
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

const Fp8Gemm::Plan& Fp8Gemm::plan(std::int64_t m, std::int64_t n, std::int64_t k) {
  const auto key = std::make_tuple(m, n, k);
  if (const auto it = plans_.find(key); it != plans_.end()) return it->second;
  Plan& p = plans_[key];  // destroyed with the others even if a step below throws
  // Column-major: D^T (n x m) = op(W) (n x k) op(A) (k x m); W stored k x n (ld k) and transposed, A k x m (ld k).
  check(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t transposed = CUBLAS_OP_T, plain = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &transposed, sizeof(transposed)),
        "cublasLtMatmulDescSetAttribute (TRANSA)");
  check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof(plain)),
        "cublasLtMatmulDescSetAttribute (TRANSB)");
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  check(cublasLtMatrixLayoutCreate(&p.w, CUDA_R_8F_E4M3, u(k), u(n), k), "cublasLtMatrixLayoutCreate (W)");
  check(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_8F_E4M3, u(k), u(m), k), "cublasLtMatrixLayoutCreate (A)");
  check(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, u(n), u(m), n), "cublasLtMatrixLayoutCreate (C)");
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const std::size_t workspace = workspace_.bytes();
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &workspace, sizeof(workspace));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.w, p.a, p.c, p.c, pref, 1, &heuristic, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check(status, "cublasLtMatmulAlgoGetHeuristic (FP8)");
  if (found == 0) throw Error(ErrorKind::Runtime, "cuBLASLt: no FP8 GEMM algorithm for this shape");
  p.algo = heuristic.algo;
  return p;
}

void Fp8Gemm::run(std::int64_t m, std::int64_t n, std::int64_t k, const __nv_fp8_e4m3* a, const __nv_fp8_e4m3* w,
                  __nv_bfloat16* c, cudaStream_t stream) {
  const Plan& p = plan(m, n, k);
  const float alpha = 1.0f, beta = 0.0f;
  check(cublasLtMatmul(handle_, p.op, &alpha, w, p.w, a, p.a, &beta, c, p.c, c, p.c, &p.algo, workspace_.get(),
                       workspace_.bytes(), stream),
        "cublasLtMatmul (FP8)");
}

void cast_bf16_to_fp8(const __nv_bfloat16* x, __nv_fp8_e4m3* y, std::size_t count, float scale, cudaStream_t stream) {
  if (count % 8 != 0) throw Error(ErrorKind::Runtime, "cast: count must be a multiple of 8");
  const std::size_t vectors = count / 8;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((vectors + 255) / 256, 132 * 16));
  cast_kernel<<<std::max(blocks, 1u), 256, 0, stream>>>(reinterpret_cast<const uint4*>(x), reinterpret_cast<uint2*>(y),
                                                        vectors, scale);
  check(cudaGetLastError(), "cast kernel launch");
}

void copy_on_blocks(const void* from, void* to, std::size_t bytes, int blocks, cudaStream_t stream) {
  copy_kernel<<<static_cast<unsigned>(blocks), 512, 0, stream>>>(static_cast<const uint4*>(from),
                                                                  static_cast<uint4*>(to), bytes / 16);
  check(cudaGetLastError(), "copy kernel launch");
}

AttentionBuffers::AttentionBuffers(const AttentionShapeGpu& s)
    : q(static_cast<std::size_t>(s.heads * s.queries * s.head_dim) * 2),
      k(static_cast<std::size_t>(s.heads * s.context * s.head_dim) * 2),
      v(static_cast<std::size_t>(s.heads * s.context * s.head_dim) * 2),
      o(static_cast<std::size_t>(s.heads * s.queries * s.head_dim) * 2),
      scores(static_cast<std::size_t>(s.heads * std::min(kQueryBlock, s.queries) * s.context) * 4),
      probs(static_cast<std::size_t>(s.heads * std::min(kQueryBlock, s.queries) * s.context) * 2) {}

void attention_bf16(cublasHandle_t handle, cudaStream_t stream, const AttentionShapeGpu& s, AttentionBuffers& b) {
  if (s.queries <= 0 || s.context < s.queries || s.heads <= 0 || s.head_dim <= 0)
    throw Error(ErrorKind::Runtime, "attention: needs 0 < queries <= context, heads and head_dim > 0");
  const std::int64_t block = std::min(kQueryBlock, s.queries);
  const std::int64_t earlier = s.context - s.queries;  // tokens before the first query
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  const float one = 1.0f, zero = 0.0f;
  const int hd = to_int(s.head_dim, "head_dim");
  const int heads = to_int(s.heads, "heads");
  // Layouts, row-major per head: Q, O [queries x hd]; K, V [context x hd];
  // scores and probabilities [rows x keys] with leading dimension keys.
  for (std::int64_t b0 = 0; b0 < s.queries; b0 += block) {
    const int rows = to_int(std::min(block, s.queries - b0), "rows");
    const int keys = to_int(earlier + b0 + rows, "keys");
    // Column-major S^T (keys x rows) = K (keys x hd) Q_b^T (hd x rows).
    check(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, keys, rows, hd, &scale, b.k.get(), CUDA_R_16BF,
                                     hd, s.context * s.head_dim, b.q.as<__nv_bfloat16>() + b0 * s.head_dim, CUDA_R_16BF,
                                     hd, s.queries * s.head_dim, &zero, b.scores.get(), CUDA_R_32F, keys,
                                     block * s.context, heads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx (scores)");
    causal_softmax_kernel<<<dim3(static_cast<unsigned>(rows), static_cast<unsigned>(heads)), 256, 0, stream>>>(
        b.scores.as<float>(), b.probs.as<__nv_bfloat16>(), keys, earlier + b0 + 1, block * s.context);
    check(cudaGetLastError(), "softmax kernel launch");
    // Column-major O_b^T (hd x rows) = V^T (hd x keys) P^T (keys x rows).
    check(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, hd, rows, keys, &one, b.v.get(), CUDA_R_16BF, hd,
                                     s.context * s.head_dim, b.probs.get(), CUDA_R_16BF, keys, block * s.context, &zero,
                                     b.o.as<__nv_bfloat16>() + b0 * s.head_dim, CUDA_R_16BF, hd, s.queries * s.head_dim,
                                     heads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx (output)");
  }
}

}  // namespace moeplan::cuda_ops
