#pragma once
// Output files are never left half-written: content goes to a temporary file
// in the same folder, which is then renamed over the target.

#include <string>

namespace moeplan::io {

/// Writes content to path atomically; failure is a runtime Error naming the path.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace moeplan::io
