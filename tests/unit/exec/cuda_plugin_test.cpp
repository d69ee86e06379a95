// The loader of the CUDA plug-in (hostrt/cuda_plugin.hpp), on every machine:
// where it looks, and the one-line errors when there is nothing to load or
// what is there does not load. (Loading the real plug-in is tests/cli/cuda_plugin_test.sh's.)

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <moeplan/core/error.hpp>
#include <moeplan/exec/backend.hpp>
#include <moeplan/hostrt/cuda_plugin.hpp>

using namespace moeplan;

namespace {

// Sets MOEPLAN_CUDA_PLUGIN for one scope, and puts back what was there.
class PluginVariable {
 public:
  explicit PluginVariable(const std::string& value) {
    if (const char* old = std::getenv(hostrt::kCudaPluginVariable)) old_ = old;
    ::setenv(hostrt::kCudaPluginVariable, value.c_str(), 1);
  }
  ~PluginVariable() {
    if (old_)
      ::setenv(hostrt::kCudaPluginVariable, old_->c_str(), 1);
    else
      ::unsetenv(hostrt::kCudaPluginVariable);
  }
  PluginVariable(const PluginVariable&) = delete;
  PluginVariable& operator=(const PluginVariable&) = delete;

 private:
  std::optional<std::string> old_;
};

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos; }

}  // namespace

TEST_CASE("hostrt::cuda_plugin_candidates: the variable alone, else beside the executable first", "[exec]") {
  SECTION("MOEPLAN_CUDA_PLUGIN replaces the search") {
    const PluginVariable v("/opt/x/libmoeplan_cuda.so");
    CHECK(hostrt::cuda_plugin_candidates() == std::vector<std::string>{"/opt/x/libmoeplan_cuda.so"});
  }
  SECTION("without it: this executable's directory, its ../lib, the build tree") {
    const PluginVariable v("");  // empty counts as unset
    const std::vector<std::string> c = hostrt::cuda_plugin_candidates();
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
    REQUIRE(c.size() >= 2);
    CHECK(c[0] == (exe.parent_path() / "libmoeplan_cuda.so").string());
    CHECK(c[1] == (exe.parent_path() / ".." / "lib" / "libmoeplan_cuda.so").lexically_normal().string());
  }
}

TEST_CASE("hostrt::cuda_plugin: one line naming what is missing", "[exec]") {
  SECTION("no plug-in file: an input error on the backend (exit 2)") {
    const PluginVariable v("/nonexistent/libmoeplan_cuda.so");
    try {
      (void)exec::make_backend("cuda");
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Input);
      CHECK(e.field() == "request.backend");
      CHECK_THAT(e.reason(),
                 Catch::Contains("MOEPLAN_CUDA_PLUGIN=/nonexistent/libmoeplan_cuda.so names no such file") &&
                     Catch::Contains("MOEPLAN_WITH_CUDA"));
      CHECK(one_line(e.reason()));
    }
  }
  SECTION("a file that is no library: a runtime error with the loader's reason (exit 1)") {
    const std::filesystem::path path = std::filesystem::temp_directory_path() / "moeplan-not-a-plugin.so";
    std::ofstream(path) << "not an ELF file\n";
    const PluginVariable v(path.string());
    try {
      (void)hostrt::cuda_plugin();
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Runtime);
      CHECK_THAT(e.reason(), Catch::StartsWith("cannot load the CUDA plug-in " + path.string() + ": ") &&
                                 Catch::Contains("libcudart"));
      CHECK(one_line(e.reason()));
    }
    std::filesystem::remove(path);
  }
}
