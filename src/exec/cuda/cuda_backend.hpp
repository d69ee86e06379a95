#pragma once
// The CUDA backend's factory (cuda_backend.cu), built only with CUDA and NCCL
// into the CUDA plug-in, whose entry point hands it to exec::make_backend("cuda")
// (hostrt/cuda_plugin.hpp).

#include <memory>

#include <moeplan/exec/backend.hpp>

namespace moeplan::exec {

std::unique_ptr<Backend> make_cuda_backend();

}  // namespace moeplan::exec
