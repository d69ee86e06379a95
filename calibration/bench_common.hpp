// Shared helpers of the calibration microbenchmarks (after nccl-tests
// src/common.cu): status checks that exit with a message, a CUDA-event timer,
// and the CSV row format `moeplan fit` reads (op,link,group,size,time_ms).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <cuda_runtime.h>

#define CALIB_CUDA(call)                                                                               \
  do {                                                                                                 \
    cudaError_t status_ = (call);                                                                      \
    if (status_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(status_)); \
      std::exit(1);                                                                                    \
    }                                                                                                  \
  } while (0)

namespace calib {

// Warm-up then timed iterations, as nccl-tests does (-w 5 -n 20 by default).
constexpr int kWarmupIters = 5;
constexpr int kTimedIters = 20;

/// Milliseconds per iteration of launch() on stream, averaged over kTimedIters.
template <typename Launch>
double time_ms(cudaStream_t stream, Launch&& launch) {
  for (int i = 0; i < kWarmupIters; ++i) launch();
  cudaEvent_t start, stop;
  CALIB_CUDA(cudaEventCreate(&start));
  CALIB_CUDA(cudaEventCreate(&stop));
  CALIB_CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < kTimedIters; ++i) launch();
  CALIB_CUDA(cudaEventRecord(stop, stream));
  CALIB_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  CALIB_CUDA(cudaEventElapsedTime(&ms, start, stop));
  CALIB_CUDA(cudaEventDestroy(start));
  CALIB_CUDA(cudaEventDestroy(stop));
  return static_cast<double>(ms) / kTimedIters;
}

inline void csv_header() { std::printf("op,link,group,size,time_ms\n"); }
inline void csv_row(const char* op, const char* link, long long group, double size, double ms) {
  std::printf("%s,%s,%lld,%.0f,%.6f\n", op, link, group, size, ms);
}

}  // namespace calib
