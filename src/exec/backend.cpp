#include <moeplan/exec/backend.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/hostrt/cuda_plugin.hpp>

#include "host_backend.hpp"

namespace moeplan::exec {

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "host") return make_host_backend();
  if (name == "cuda") return hostrt::cuda_plugin().make_backend();  // loaded now (the CUDA plug-in)
  throw Error(ErrorKind::Input, fmt::format("unknown backend {} (host or cuda)", quoted_for_error(name)),
              "request.backend");
}

}  // namespace moeplan::exec
