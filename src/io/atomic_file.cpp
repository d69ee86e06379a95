#include <moeplan/io/atomic_file.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::io {

void write_file_atomic(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path temp = target.parent_path() / fmt::format(".{}.tmp{}", target.filename().string(), ::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw_runtime_error(fmt::format("{}: cannot create output file", path));
    out << content;
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(temp, ignored);
      throw_runtime_error(fmt::format("{}: cannot write output file", path));
    }
  }
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw_runtime_error(fmt::format("{}: cannot rename output into place: {}", path, ec.message()));
  }
}

}  // namespace moeplan::io
