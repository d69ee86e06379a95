#pragma once
// Parsing Protobuf text format with positions: every field that was written in
// the file is indexed by its dotted path ("moe.top_k", "costs[2].alpha_ms") so
// that an error found later, on the plain specs, can point at a line.

#include <cstddef>
#include <map>
#include <string>

#include <google/protobuf/message.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/text_file.hpp>

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

/// Parses text into message; a syntax, type or unknown-field error throws an
/// input Error located in file and naming the enclosing field.
LocationIndex parse_text_proto(const std::string& file, const std::string& text, google::protobuf::Message& message);

/// The dotted path of the field being written at (line, column), both 0-based,
/// found by tracking braces; "" at top level. Used for syntax errors, where the
/// protobuf parser gives a position but no field.
std::string enclosing_field_path(const std::string& text, int line, int column);

}  // namespace moeplan::io
