#include <moeplan/hostrt/cuda_plugin.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/version.hpp>

namespace moeplan::hostrt {
namespace {

namespace fs = std::filesystem;

// The build that compiled this moeplan puts the plug-in here (CMake).
#ifndef MOEPLAN_CUDA_PLUGIN_BUILD_DIR
#define MOEPLAN_CUDA_PLUGIN_BUILD_DIR ""
#endif

std::string executable_dir() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  return error ? std::string() : exe.parent_path().string();
}

// dlerror()'s text: one line naming the file that failed ("libcudart.so.13:
// cannot open shared object file: No such file or directory").
std::string dl_error() {
  const char* text = dlerror();
  return text != nullptr ? std::string(text) : std::string("unknown dlopen error");
}

const CudaPlugin& load(const std::string& path) {
  // RTLD_LOCAL: the plug-in's copies of moeplan's static libraries stay its own.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr)
    throw Error(ErrorKind::Runtime,
                fmt::format("cannot load the CUDA plug-in {}: {} (the CUDA libraries it needs, libcudart, libcublas "
                            "and libnccl, must be installed where the dynamic loader finds them: ldconfig or "
                            "LD_LIBRARY_PATH)",
                            path, dl_error()));
  void* symbol = dlsym(library, kCudaPluginEntry);
  if (symbol == nullptr)
    throw Error(ErrorKind::Runtime, fmt::format("the CUDA plug-in {} has no entry point {}: it is not of this moeplan "
                                                "{}; use the plug-in its build made",
                                                path, kCudaPluginEntry, kVersion));
  using Entry = const CudaPlugin* (*)();
  Entry entry = nullptr;
  std::memcpy(&entry, &symbol, sizeof entry);  // a data pointer to a function pointer, as POSIX allows
  const CudaPlugin* plugin = entry();
  if (plugin == nullptr || plugin->moeplan_version == nullptr ||
      std::string_view(plugin->moeplan_version) != kVersion || plugin->make_backend == nullptr ||
      plugin->run_calibration == nullptr)
    throw Error(ErrorKind::Runtime,
                fmt::format("the CUDA plug-in {} was built by moeplan {}, not this moeplan {}: its types would not "
                            "match; use the plug-in this moeplan's build made",
                            path, plugin && plugin->moeplan_version ? plugin->moeplan_version : "(unknown)", kVersion));
  // Never closed: backends it made may live until exit.
  return *plugin;
}

}  // namespace

std::vector<std::string> cuda_plugin_candidates() {
  if (const char* named = std::getenv(kCudaPluginVariable); named != nullptr && *named != '\0') return {named};
  std::vector<std::string> out;
  auto add = [&](const fs::path& dir) {
    if (dir.empty()) return;
    const std::string path = (dir / kCudaPluginFile).lexically_normal().string();
    for (const std::string& o : out)
      if (o == path) return;
    out.push_back(path);
  };
  const fs::path exe_dir = executable_dir();
  add(exe_dir);
  if (!exe_dir.empty()) add(exe_dir / ".." / "lib");
  add(fs::path(MOEPLAN_CUDA_PLUGIN_BUILD_DIR));
  return out;
}

const CudaPlugin& cuda_plugin() {
  static std::mutex mutex;
  static const CudaPlugin* loaded = nullptr;  // the one plug-in of this process, once loaded
  std::lock_guard lock(mutex);
  if (loaded != nullptr) return *loaded;
  const std::vector<std::string> candidates = cuda_plugin_candidates();
  for (const std::string& path : candidates) {
    std::error_code error;
    if (!fs::is_regular_file(path, error)) continue;
    loaded = &load(path);
    return *loaded;
  }
  if (const char* named = std::getenv(kCudaPluginVariable); named != nullptr && *named != '\0')
    throw Error(ErrorKind::Input,
                fmt::format("the cuda backend is the plug-in {}, and {}={} names no such file; a moeplan build with "
                            "CUDA and NCCL (MOEPLAN_WITH_CUDA) makes it beside its moeplan binary",
                            kCudaPluginFile, kCudaPluginVariable, named),
                "request.backend");
  std::string looked;
  for (const std::string& path : candidates) looked += (looked.empty() ? "" : ", ") + path;
  throw Error(ErrorKind::Input,
              fmt::format("the cuda backend is the plug-in {}, which is not installed (looked for {}); a moeplan "
                          "build with CUDA and NCCL (MOEPLAN_WITH_CUDA) makes it beside its moeplan binary, or set "
                          "{} to its path",
                          kCudaPluginFile, looked, kCudaPluginVariable),
              "request.backend");
}

}  // namespace moeplan::hostrt
