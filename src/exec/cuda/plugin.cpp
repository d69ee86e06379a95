// The entry point of the CUDA plug-in, libmoeplan_cuda.so (hostrt/cuda_plugin.hpp):
// the one symbol it exports. The moeplan binary loads it when the cuda backend
// is asked for and calls through the table below.

#include <moeplan/core/version.hpp>
#include <moeplan/exec/backend.hpp>
#include <moeplan/hostrt/cuda_plugin.hpp>

#include "cuda_backend.hpp"  // src/exec/cuda/: make_cuda_backend
#include "cuda_bench.hpp"    // src/calibrate/: gpu::run_calibration

extern "C" __attribute__((visibility("default"))) const moeplan::hostrt::CudaPlugin* moeplan_cuda_plugin_v1() {
  static const moeplan::hostrt::CudaPlugin plugin{moeplan::kVersion, &moeplan::exec::make_cuda_backend,
                                                  &moeplan::calibrate::gpu::run_calibration};
  return &plugin;
}
