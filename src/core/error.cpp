#include <moeplan/core/error.hpp>

#include <fmt/format.h>

namespace moeplan {

Error::Error(ErrorKind kind, std::string reason, std::string field, SourceLocation location)
    : std::runtime_error(reason),
      kind_(kind),
      reason_(std::move(reason)),
      field_(std::move(field)),
      location_(std::move(location)) {}

Error Error::located(SourceLocation location) const { return Error(kind_, reason_, field_, std::move(location)); }

Error Error::prefixed(const std::string& prefix) const {
  if (prefix.empty()) return *this;
  std::string field = field_.empty() ? prefix : prefix + "." + field_;
  return Error(kind_, reason_, std::move(field), location_);
}

std::string format_error(const Error& error) {
  std::string out;
  const SourceLocation& loc = error.location();
  if (!loc.file.empty()) {
    out += loc.file;
    if (loc.line > 0) out += fmt::format(":{}:{}", loc.line, loc.column > 0 ? loc.column : 1);
    out += ": ";
  }
  // A field path is the user's too (--set NAME=...): a long one is cut as values are.
  if (!error.field().empty())
    out += (error.field().size() > kQuotedForErrorMax ? quoted_for_error(error.field()) : error.field()) + ": ";
  out += error.reason();
  return out;
}

namespace {

// An option_ref is the field between two separators that quoted_for_error
// never lets through from a user's text (it escapes control characters).
constexpr char kRefOpen = '\x1e', kRefClose = '\x1f';

}  // namespace

std::string option_ref(std::string_view field) { return kRefOpen + std::string(field) + kRefClose; }

std::string name_options(std::string_view text, OptionNamer namer) {
  std::string out;
  while (true) {
    const std::size_t open = text.find(kRefOpen);
    const std::size_t close = open == std::string_view::npos ? open : text.find(kRefClose, open);
    if (close == std::string_view::npos) break;
    out += text.substr(0, open);
    out += namer(text.substr(open + 1, close - open - 1));
    text.remove_prefix(close + 1);
  }
  return out + std::string(text);
}

std::string format_error(const Error& error, OptionNamer namer) {
  const bool option = error.field().rfind(kRequestField, 0) == 0;
  SourceLocation where = error.location();
  where.file = name_options(where.file, namer);  // an override typed by the user is placed at the set option
  const Error named(error.kind(), name_options(error.reason(), namer), option ? namer(error.field()) : error.field(),
                    std::move(where));
  return format_error(named);
}

std::string quoted_for_error(std::string_view value) {
  std::size_t keep = value.size();
  if (keep > kQuotedForErrorMax) {
    keep = kQuotedForErrorMax;
    // Not inside a UTF-8 character: back up over continuation bytes (10xxxxxx).
    while (keep > 0 && (static_cast<unsigned char>(value[keep]) & 0xC0) == 0x80) --keep;
  }
  std::string out = "'";
  for (const char c : value.substr(0, keep)) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7F) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  out += '\'';
  if (keep < value.size()) out += fmt::format("... ({} bytes)", value.size());
  return out;
}

void throw_input_error(std::string field, std::string reason) {
  throw Error(ErrorKind::Input, std::move(reason), std::move(field));
}

void throw_runtime_error(std::string reason) { throw Error(ErrorKind::Runtime, std::move(reason)); }

namespace detail {
void check_failed(const char* condition, const char* file, int line, const std::string& message) {
  throw Error(ErrorKind::Runtime, fmt::format("internal check failed: {} ({}:{}): {}", condition, file, line, message));
}
}  // namespace detail

}  // namespace moeplan
