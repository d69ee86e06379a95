#include "proto_text.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <moeplan/io/utf8.hpp>

namespace moeplan::io {
namespace pb = google::protobuf;

void LocationIndex::add(const std::string& path, int line, int column) {
  positions_[path] = SourceLocation{file_, line, column};
}

SourceLocation LocationIndex::find(const std::string& path) const {
  std::string key = path;
  while (!key.empty()) {
    if (auto it = positions_.find(key); it != positions_.end()) return it->second;
    // Drop the last component: "a.b[2]" -> "a.b" -> "a".
    const std::size_t cut = key.find_last_of(".[");
    key = cut == std::string::npos ? std::string() : key.substr(0, cut);
  }
  return SourceLocation{file_, 0, 0};
}

namespace {

// What a path names when it is not a regular file, for the error.
const char* special_file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string read_text_file(const std::string& path) {
  // Only regular files, and only up to kMaxInputFileBytes: a FIFO with no
  // writer blocks forever and /dev/zero never ends (issue 14 item 4); stat()
  // neither blocks nor reads. The read itself stops one byte past the limit,
  // so a file that grows while it is read is refused too.
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) throw Error(ErrorKind::Input, "cannot open file", "", SourceLocation{path, 0, 0});
  if (!S_ISREG(info.st_mode))
    throw Error(ErrorKind::Input,
                fmt::format("is {}; moeplan reads its inputs from regular files only", special_file_kind(info.st_mode)),
                "", SourceLocation{path, 0, 0});
  auto too_large = [&] {
    return Error(ErrorKind::Input,
                 fmt::format("is larger than {} MiB, the limit on an input file", kMaxInputFileBytes >> 20), "",
                 SourceLocation{path, 0, 0});
  };
  if (static_cast<std::uintmax_t>(info.st_size) > kMaxInputFileBytes) throw too_large();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Input, "cannot open file", "", SourceLocation{path, 0, 0});
  std::string text(static_cast<std::size_t>(info.st_size) + 1, '\0');
  std::size_t have = 0;
  while (true) {
    in.read(text.data() + have, static_cast<std::streamsize>(text.size() - have));
    have += static_cast<std::size_t>(in.gcount());
    if (in.bad()) throw Error(ErrorKind::Input, "cannot read file", "", SourceLocation{path, 0, 0});
    if (!in) break;  // end of file
    if (have > kMaxInputFileBytes) throw too_large();
    text.resize(std::min(2 * text.size(), kMaxInputFileBytes + 1), '\0');
  }
  text.resize(have);
  return text;
}

namespace {

// Keeps an error on one printable line whatever bytes the input held.
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
    if (out.size() > 160) return out + "...";
  }
  return out;
}

class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (has_error) return;
    has_error = true;
    line_ = line;
    column_ = column;
    message_ = message;
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}

  bool has_error = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

void index_message(const pb::Message& message, const pb::TextFormat::ParseInfoTree* tree, const std::string& prefix,
                   LocationIndex& index) {
  if (tree == nullptr) return;
  const pb::Reflection* reflection = message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const std::string base = prefix.empty() ? field->name() : prefix + "." + field->name();
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const int tree_index = field->is_repeated() ? i : -1;
      const std::string path = field->is_repeated() ? fmt::format("{}[{}]", base, i) : base;
      const pb::TextFormat::ParseLocation loc = tree->GetLocation(field, tree_index);
      if (loc.line >= 0) index.add(path, loc.line + 1, loc.column + 1);
      if (field->is_repeated() && i == 0 && loc.line >= 0) index.add(base, loc.line + 1, loc.column + 1);
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& child = field->is_repeated() ? reflection->GetRepeatedMessage(message, field, i)
                                                        : reflection->GetMessage(message, field);
        index_message(child, tree->GetTreeForNested(field, tree_index), path, index);
      }
    }
  }
}

// Every string of an input must be UTF-8: names and descriptions are echoed
// into JSON, CSV and plan files, which readers reject otherwise. Protobuf's
// text parser checks this only for proto3 files; ours are proto2.
void check_utf8(const pb::Message& message, const std::string& prefix, const LocationIndex& index) {
  const pb::Reflection* reflection = message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const std::string base = prefix.empty() ? field->name() : prefix + "." + field->name();
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const std::string path = field->is_repeated() ? fmt::format("{}[{}]", base, i) : base;
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        check_utf8(field->is_repeated() ? reflection->GetRepeatedMessage(message, field, i)
                                        : reflection->GetMessage(message, field),
                   path, index);
      } else if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
        const std::string value =
            field->is_repeated() ? reflection->GetRepeatedString(message, field, i) : reflection->GetString(message, field);
        if (const std::size_t at = first_invalid_utf8(value); at != std::string::npos)
          throw Error(ErrorKind::Input, invalid_utf8_reason(value, at), path, index.find(path));
      }
    }
  }
}

}  // namespace

LocationIndex parse_text_proto(const std::string& file, const std::string& text, pb::Message& message) {
  pb::TextFormat::Parser parser;
  pb::TextFormat::ParseInfoTree tree;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  const bool ok = parser.ParseFromString(text, &message);
  if (!ok || errors.has_error) {
    std::string field = enclosing_field_path(text, errors.line_, errors.column_);
    // An unknown field is reported at its own name, which the scan has not reached yet.
    const std::string marker = "no field named \"";
    if (const std::size_t at = errors.message_.find(marker); at != std::string::npos) {
      const std::size_t start = at + marker.size();
      const std::size_t end = errors.message_.find('"', start);
      const std::string name = end == std::string::npos ? "" : errors.message_.substr(start, end - start);
      const bool named =
          field == name || (field.size() > name.size() &&
                            field.compare(field.size() - name.size() - 1, std::string::npos, "." + name) == 0);
      if (!name.empty() && !named) field += (field.empty() ? "" : ".") + name;
    }
    if (field.empty()) field = message.GetDescriptor()->name();
    const std::string reason = errors.has_error ? printable(errors.message_) : "cannot parse text format";
    throw Error(ErrorKind::Input, reason, field, SourceLocation{file, errors.line_ + 1, errors.column_ + 1});
  }
  LocationIndex index(file);
  index_message(message, &tree, "", index);
  check_utf8(message, "", index);
  return index;
}

std::string enclosing_field_path(const std::string& text, int line, int column) {
  std::vector<std::string> stack;
  std::string current;  // field whose value is being written
  std::string pending;  // last identifier, a field name if ':' '{' '<' follows
  int at_line = 0;
  int at_column = 0;
  std::size_t i = 0;
  auto before_target = [&] { return at_line < line || (at_line == line && at_column < column); };
  auto advance = [&] {
    if (text[i] == '\n') {
      ++at_line;
      at_column = 0;
    } else {
      ++at_column;
    }
    ++i;
  };
  bool after_colon = false;  // an identifier after ':' is a value (an enum), not a field
  while (i < text.size() && before_target()) {
    const char c = text[i];
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') advance();
    } else if (c == '"' || c == '\'') {
      advance();
      while (i < text.size() && text[i] != c && text[i] != '\n') {
        if (text[i] == '\\' && i + 1 < text.size()) advance();
        advance();
      }
      if (i < text.size()) advance();
      after_colon = false;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::string word;
      while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) {
        word += text[i];
        advance();
      }
      if (!after_colon) {
        current.clear();
        pending = word;
      }
      after_colon = false;
    } else if (c == ':') {
      if (!pending.empty()) current = pending;
      pending.clear();
      after_colon = true;
      advance();
    } else if (c == '{' || c == '<') {
      if (!pending.empty()) current = pending;
      stack.push_back(current);
      current.clear();
      pending.clear();
      after_colon = false;
      advance();
    } else if (c == '}' || c == '>') {
      if (!stack.empty()) stack.pop_back();
      current.clear();
      pending.clear();
      after_colon = false;
      advance();
    } else {
      if (!std::isspace(static_cast<unsigned char>(c))) after_colon = false;
      advance();
    }
  }
  if (!pending.empty()) current = pending;
  std::string path;
  for (const std::string& part : stack)
    if (!part.empty()) path += (path.empty() ? "" : ".") + part;
  if (!current.empty()) path += (path.empty() ? "" : ".") + current;
  return path;
}

}  // namespace moeplan::io
