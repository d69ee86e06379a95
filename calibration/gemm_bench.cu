// GEMM calibration: times cuBLAS GEMMs of (tokens x M) . (M x H) for the
// FSMoE size range (tokens x M = k x 2^19 elements, k = 1..12, FSMoE Fig. 5)
// and the zoo's (d_model, expert hidden) shapes; prints the CSV `moeplan fit`
// reads, size in FLOPs (2 tokens M H).
//   gemm_bench [--dtype fp32|bf16] [--shape M,H]...

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <cstring>
#include <utility>
#include <vector>

#include "bench_common.hpp"

#define CALIB_CUBLAS(call)                                                                            \
  do {                                                                                                \
    cublasStatus_t status_ = (call);                                                                  \
    if (status_ != CUBLAS_STATUS_SUCCESS) {                                                           \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, (int)status_); \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (0)

int main(int argc, char** argv) {
  bool bf16 = false;
  // (d_model, expert hidden) of models/: gpt-moe-m, gpt-moe-l, gpt2-xl-moe, mixtral-8x7b, mixtral-8x22b,
  // qwen2-57b-a14b.
  std::vector<std::pair<long long, long long>> shapes = {{768, 1536},   {1024, 2048},  {1600, 6400},
                                                         {4096, 14336}, {6144, 16384}, {3584, 2560}};
  bool custom = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc) {
      bf16 = !std::strcmp(argv[++i], "bf16");
    } else if (!std::strcmp(argv[i], "--shape") && i + 1 < argc) {
      long long m = 0, h = 0;
      if (std::sscanf(argv[++i], "%lld,%lld", &m, &h) != 2 || m <= 0 || h <= 0) {
        std::fprintf(stderr, "gemm_bench: --shape expects M,H\n");
        return 2;
      }
      if (!custom) shapes.clear();
      custom = true;
      shapes.emplace_back(m, h);
    } else {
      std::fprintf(stderr, "usage: gemm_bench [--dtype fp32|bf16] [--shape M,H]...\n");
      return 2;
    }
  }
  const size_t elem = bf16 ? 2 : 4;
  cublasHandle_t handle;
  CALIB_CUBLAS(cublasCreate(&handle));
  cudaStream_t stream;
  CALIB_CUDA(cudaStreamCreate(&stream));
  CALIB_CUBLAS(cublasSetStream(handle, stream));
  calib::csv_header();
  for (const auto& shape : shapes) {
    const long long m = shape.first;
    const long long h = shape.second;
    const long long max_tokens = 12LL * (1LL << 19) / m + 1;
    void *a, *b, *c;
    CALIB_CUDA(cudaMalloc(&a, max_tokens * m * elem));
    CALIB_CUDA(cudaMalloc(&b, m * h * elem));
    CALIB_CUDA(cudaMalloc(&c, max_tokens * h * elem));
    CALIB_CUDA(cudaMemset(a, 0, max_tokens * m * elem));
    CALIB_CUDA(cudaMemset(b, 0, m * h * elem));
    for (int k = 1; k <= 12; ++k) {
      const long long tokens = k * (1LL << 19) / m;
      if (tokens == 0) continue;
      const float alpha = 1.0f, beta = 0.0f;
      // Column-major: C (H x tokens) = B (H x M) . A (M x tokens).
      const double ms = calib::time_ms(stream, [&] {
        CALIB_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)h, (int)tokens, (int)m, &alpha, b,
                                  bf16 ? CUDA_R_16BF : CUDA_R_32F, (int)h, a, bf16 ? CUDA_R_16BF : CUDA_R_32F, (int)m,
                                  &beta, c, bf16 ? CUDA_R_16BF : CUDA_R_32F, (int)h, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
      });
      calib::csv_row("gemm", "local", 1, 2.0 * (double)tokens * (double)m * (double)h, ms);
    }
    CALIB_CUDA(cudaFree(a));
    CALIB_CUDA(cudaFree(b));
    CALIB_CUDA(cudaFree(c));
  }
  CALIB_CUBLAS(cublasDestroy(handle));
  return 0;
}
