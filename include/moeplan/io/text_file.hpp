#pragma once
// Reading an input file whole, within the size every input has (docs/reliability.md).

#include <cstddef>
#include <string>

namespace moeplan::io {

/// The largest input file read: 64 MiB. A timing CSV of a million samples
/// (rows of about 60 bytes, e.g. "gemm,local,1,8589934592,0.0412") fits; the
/// largest bundled input is 6 kB (calibration/nccl_bench.cu is not an input,
/// the largest profile is 4 kB).
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;

/// Reads a regular file of at most kMaxInputFileBytes. Input errors naming the
/// path: missing or unreadable, a directory, FIFO, device or socket, too large.
std::string read_text_file(const std::string& path);

}  // namespace moeplan::io
