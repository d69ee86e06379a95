#include <moeplan/exec/backend.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

#include "host_backend.hpp"
#ifdef MOEPLAN_EXEC_CUDA
#include "cuda_backend.hpp"
#endif

namespace moeplan::exec {

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "host") return make_host_backend();
  if (name == "cuda") {
#ifdef MOEPLAN_EXEC_CUDA
    return make_cuda_backend();
#else
    throw Error(ErrorKind::Input, "this moeplan was built without CUDA and NCCL (MOEPLAN_WITH_CUDA); use --backend host",
                "--backend");
#endif
  }
  throw Error(ErrorKind::Input, fmt::format("unknown backend '{}' (host or cuda)", name), "--backend");
}

}  // namespace moeplan::exec
