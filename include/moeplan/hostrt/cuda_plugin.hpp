#pragma once
// The CUDA plug-in (docs/architecture.md, "CUDA plug-in"): the CUDA executor
// backend (src/exec/cuda/) and the CUDA calibration (src/calibrate/*.cu) are
// one shared library, libmoeplan_cuda.so, built only with CUDA and NCCL and
// loaded (dlopen) only when a request asks for the cuda backend. The moeplan
// binary and the Python module link no CUDA library, so they start, small and
// fast, where none is installed. Plain C++: the plug-in's types are moeplan's,
// so it must come from the same moeplan build (the version is checked).

#include <memory>
#include <string>
#include <vector>

namespace moeplan::exec {
class Backend;
}
namespace moeplan::calibrate {
struct HostCalibration;
struct CudaCalibrationOptions;
}  // namespace moeplan::calibrate

namespace moeplan::hostrt {

/// The plug-in's file name, beside the moeplan binary in a build.
inline constexpr const char* kCudaPluginFile = "libmoeplan_cuda.so";
/// The environment variable that names the plug-in's path, replacing the search.
inline constexpr const char* kCudaPluginVariable = "MOEPLAN_CUDA_PLUGIN";
/// Its entry point, a C symbol: `extern "C" const moeplan::hostrt::CudaPlugin* moeplan_cuda_plugin_v1()`.
/// A new interface gets a new name (v2), so an old plug-in is refused by name.
inline constexpr const char* kCudaPluginEntry = "moeplan_cuda_plugin_v1";

/// @brief What the CUDA plug-in provides (interface version 1).
struct CudaPlugin {
  /// core/version.hpp's kVersion of the build that made it: its types are that build's.
  const char* moeplan_version = nullptr;
  /// The CUDA executor backend (exec::make_backend("cuda")).
  std::unique_ptr<exec::Backend> (*make_backend)() = nullptr;
  /// The CUDA calibration (calibrate::run_cuda_calibration).
  calibrate::HostCalibration (*run_calibration)(const calibrate::CudaCalibrationOptions& options) = nullptr;
};

/// Where the plug-in is looked for, in this order: the path in
/// $MOEPLAN_CUDA_PLUGIN alone when that is set; else kCudaPluginFile in the
/// running executable's directory (/proc/self/exe: a build's moeplan, or a
/// bundle's bin/), in its ../lib (an installed or bundled layout), and in the
/// directory of the build that compiled this moeplan (for tests and the Python
/// module, whose executable is elsewhere).
std::vector<std::string> cuda_plugin_candidates();

/// The plug-in, loaded on first use (thread-safe) and kept for the process's
/// life. Errors are one line, naming what is missing:
/// - no plug-in file at any candidate (or at $MOEPLAN_CUDA_PLUGIN): input
///   Error on field request.backend (exit 2: this moeplan has no cuda backend;
///   a build with MOEPLAN_WITH_CUDA makes it);
/// - a plug-in file that does not load (dlerror's text: a CUDA library it
///   needs, e.g. libcudart.so.13, is not installed or not on the loader's
///   path), that lacks the entry point, or that comes from another moeplan
///   version: runtime Error (exit 1: this machine or install fails).
const CudaPlugin& cuda_plugin();

}  // namespace moeplan::hostrt
