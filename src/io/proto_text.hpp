#pragma once
// Parsing Protobuf text format with positions: every field that was written in
// the file is indexed by its dotted path ("moe.top_k", "costs[2].alpha_ms") so
// that an error found later, on the plain specs, can point at a line.

#include <cstddef>
#include <map>
#include <string>

#include <google/protobuf/message.h>

#include <moeplan/core/error.hpp>

namespace moeplan::io {

/// @brief Field path -> where it was written, for one parsed file.
class LocationIndex {
 public:
  LocationIndex() = default;
  explicit LocationIndex(std::string file) : file_(std::move(file)) {}

  void add(const std::string& path, int line, int column);
  /// The position of the longest written prefix of path (the file alone if none).
  SourceLocation find(const std::string& path) const;
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::map<std::string, SourceLocation> positions_;
};

/// The largest input file read: 64 MiB. A timing CSV of a million samples
/// (rows of about 60 bytes, e.g. "gemm,local,1,8589934592,0.0412") fits; the
/// largest bundled input is 6 kB (calibration/nccl_bench.cu is not an input,
/// the largest profile is 4 kB).
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;

/// Reads a regular file of at most kMaxInputFileBytes. Input errors naming the
/// path: missing or unreadable, a directory, FIFO, device or socket, too large.
std::string read_text_file(const std::string& path);

/// Parses text into message; a syntax, type or unknown-field error throws an
/// input Error located in file and naming the enclosing field.
LocationIndex parse_text_proto(const std::string& file, const std::string& text, google::protobuf::Message& message);

/// The dotted path of the field being written at (line, column), both 0-based,
/// found by tracking braces; "" at top level. Used for syntax errors, where the
/// protobuf parser gives a position but no field.
std::string enclosing_field_path(const std::string& text, int line, int column);

}  // namespace moeplan::io
