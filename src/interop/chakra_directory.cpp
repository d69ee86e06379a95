// Finding a trace's files: PREFIX.RANK.et for ranks 0..n-1 (ASTRA-sim's
// naming, --workload-configuration=DIR/PREFIX) and comm_groups.json beside them.

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/interop/chakra.hpp>

namespace moeplan::interop {
namespace {

namespace fs = std::filesystem;

// A rank's trace of a large training run is tens of MB (one node per kernel);
// 1 GiB bounds what one file may make moeplan hold in memory.
constexpr std::uintmax_t kMaxTraceFileBytes = std::uintmax_t{1} << 30;

Error file_error(const std::string& path, const std::string& why) {
  return Error(ErrorKind::Input, why, "", SourceLocation{path, 0, 0});
}

// A regular file, read whole: a FIFO would block and a device never end.
// `total`: the bytes of the import's files read before it, counted on.
std::string read_file(const std::string& path, std::uint64_t& total) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) throw file_error(path, "cannot open file");
  if (!S_ISREG(info.st_mode)) throw file_error(path, "is not a regular file; moeplan reads traces from regular files");
  if (static_cast<std::uintmax_t>(info.st_size) > kMaxTraceFileBytes)
    throw file_error(path, fmt::format("is larger than {} MiB, the limit on a trace file", kMaxTraceFileBytes >> 20));
  total += static_cast<std::uint64_t>(info.st_size);
  if (total > kMaxChakraBytes)
    throw file_error(path,
                     fmt::format("brings the trace's files to {} bytes, more than {} MiB, the limit of one import "
                                 "(all its files together)",
                                 total, kMaxChakraBytes >> 20));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw file_error(path, "cannot open file");
  std::string bytes(static_cast<std::size_t>(info.st_size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<std::size_t>(in.gcount()) != bytes.size())
    throw file_error(path, "cannot read file (it shrank while read)");
  return bytes;
}

// "trace.12.et" -> ("trace", 12); anything else (leading zeros included) -> nothing.
std::optional<std::pair<std::string, std::int32_t>> split_name(const std::string& name) {
  const std::string suffix = ".et";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return {};
  const std::string stem = name.substr(0, name.size() - suffix.size());
  const std::size_t dot = stem.rfind('.');
  if (dot == std::string::npos || dot == 0) return {};
  const std::string digits = stem.substr(dot + 1);
  std::int32_t rank = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || rank < 0 ||
      std::to_string(rank) != digits)
    return {};
  return std::pair{stem.substr(0, dot), rank};
}

}  // namespace

ChakraInput read_chakra_directory(const std::string& directory) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec))
    throw file_error(directory, "is not a directory; import-chakra reads a folder of PREFIX.RANK.et files");
  std::map<std::string, std::map<std::int32_t, std::string>> by_prefix;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, ec))
    if (auto parsed = split_name(entry.path().filename().string()))
      by_prefix[parsed->first][parsed->second] = entry.path().string();
  if (ec) throw file_error(directory, fmt::format("cannot list the folder: {}", ec.message()));
  if (by_prefix.empty())
    throw file_error(directory, "holds no Chakra trace (files named PREFIX.RANK.et, e.g. trace.0.et)");
  if (by_prefix.size() > 1)
    throw file_error(directory, fmt::format("holds the traces of two runs ({}.*.et and {}.*.et); keep one per folder",
                                            by_prefix.begin()->first, std::next(by_prefix.begin())->first));
  const auto& [prefix, ranks] = *by_prefix.begin();
  ChakraInput input;
  input.directory = directory;
  std::int32_t expected = 0;
  std::uint64_t bytes = 0;
  for (const auto& [rank, path] : ranks) {
    if (rank != expected)
      throw file_error(directory, fmt::format("has no {}.{}.et, but has {}.{}.et: ranks must run 0..n-1", prefix,
                                              expected, prefix, rank));
    input.files.push_back({path, rank, read_file(path, bytes)});
    ++expected;
  }
  input.comm_groups_path = (fs::path(directory) / kChakraCommGroupsFile).string();
  if (fs::exists(input.comm_groups_path, ec)) input.comm_groups_json = read_file(input.comm_groups_path, bytes);
  return input;
}

}  // namespace moeplan::interop
