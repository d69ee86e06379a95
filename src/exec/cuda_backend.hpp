#pragma once
// The CUDA backend's factory, defined in src/exec/cuda/ only when moeplan is
// built with CUDA and NCCL (MOEPLAN_EXEC_CUDA); make_backend("cuda") calls it.

#include <memory>

#include <moeplan/exec/backend.hpp>

namespace moeplan::exec {

std::unique_ptr<Backend> make_cuda_backend();

}  // namespace moeplan::exec
