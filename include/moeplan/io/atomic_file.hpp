#pragma once
// Output files are never left half-written. Kept for callers that write one
// file; a command with several outputs uses OutputSet (output_set.hpp).

#include <string>

namespace moeplan::io {

/// write_output(path, content): a temporary beside the target, fsynced, then
/// renamed (devices, FIFOs, symbolic links and "-" as output_set.hpp says);
/// failure is a runtime Error naming the path.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace moeplan::io
