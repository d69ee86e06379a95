#include <moeplan/io/atomic_file.hpp>

#include <moeplan/io/output_set.hpp>

namespace moeplan::io {

void write_file_atomic(const std::string& path, const std::string& content) { write_output(path, content); }

}  // namespace moeplan::io
