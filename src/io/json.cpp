#include <moeplan/io/json.hpp>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/utf8.hpp>

namespace moeplan::io {

Json& Json::push(Json value) {
  MOEPLAN_CHECK(std::holds_alternative<Array>(value_), "push on a non-array JSON value");
  std::get<Array>(value_).push_back(std::move(value));
  return *this;
}

Json& Json::set(const std::string& key, Json value) {
  MOEPLAN_CHECK(std::holds_alternative<Object>(value_), "set on a non-object JSON value");
  std::get<Object>(value_).set(key, std::move(value));
  return *this;
}

namespace {

// Up to this many members a scan of the keys is as fast as a hash and costs no
// memory; the objects moeplan writes are that small, a config.json is not.
constexpr std::size_t kIndexedFrom = 16;

std::size_t hash_of(const std::string& key) { return std::hash<std::string_view>()(key); }

// kMaxJsonValues's memory (json.hpp) is reckoned at 40 bytes a value.
static_assert(sizeof(Json) <= 40);

}  // namespace

Json::Object::Object() = default;
Json::Object::Object(const Object& other)
    : members_(other.members_),
      slots_(other.slots_ ? std::make_unique<std::vector<std::uint32_t>>(*other.slots_) : nullptr) {}
Json::Object::Object(Object&& other) noexcept = default;
Json::Object& Json::Object::operator=(const Object& other) {
  if (this != &other) *this = Object(other);
  return *this;
}
Json::Object& Json::Object::operator=(Object&& other) noexcept = default;
Json::Object::~Object() = default;

std::size_t Json::Object::position(const std::string& key) const {
  if (!slots_) {
    for (std::size_t i = 0; i < members_.size(); ++i)
      if (members_[i].first == key) return i;
    return members_.size();
  }
  const std::vector<std::uint32_t>& slots = *slots_;
  const std::size_t mask = slots.size() - 1;
  for (std::size_t at = hash_of(key) & mask; slots[at] != 0; at = (at + 1) & mask)
    if (members_[slots[at] - 1].first == key) return slots[at] - 1;
  return members_.size();
}

void Json::Object::index(std::size_t member) {
  std::vector<std::uint32_t>& slots = *slots_;
  const std::size_t mask = slots.size() - 1;
  std::size_t at = hash_of(members_[member].first) & mask;
  while (slots[at] != 0) at = (at + 1) & mask;
  slots[at] = static_cast<std::uint32_t>(member + 1);
}

void Json::Object::rebuild_index(std::size_t slots) {
  slots_ = std::make_unique<std::vector<std::uint32_t>>(slots, 0);
  for (std::size_t i = 0; i < members_.size(); ++i) index(i);
}

const Json* Json::Object::find(const std::string& key) const {
  const std::size_t at = position(key);
  return at == members_.size() ? nullptr : &members_[at].second;
}

void Json::Object::set(const std::string& key, Json value) {
  const std::size_t at = position(key);
  if (at < members_.size()) {
    members_[at].second = std::move(value);
    return;
  }
  MOEPLAN_CHECK(members_.size() < std::numeric_limits<std::uint32_t>::max(), "a JSON object of 2^32 members");
  members_.emplace_back(key, std::move(value));
  if (!slots_ || 2 * members_.size() > slots_->size()) {
    // Past half full, or past the scan's size: at least four slots a member, a
    // quarter full, so that the table is remade each time the members double.
    if (members_.size() > kIndexedFrom) rebuild_index(std::bit_ceil(4 * members_.size()));
  } else {
    index(at);
  }
}

std::string json_quote(const std::string& text) {
  // RFC 8259 section 7: quote, backslash and C0 controls must be escaped; DEL
  // is escaped too so that no control byte reaches a terminal. Text that is not
  // UTF-8 (a path given on the command line) cannot be written as it is: each
  // byte that does not start a well-formed sequence becomes U+FFFD (escaped),
  // so every parser accepts the document.
  std::string out = "\"";
  for (std::size_t at = 0; at < text.size();) {
    const auto c = static_cast<unsigned char>(text[at]);
    const std::size_t length = utf8_sequence_length(text, at);
    if (length == 0) {
      out += "\\ufffd";
      ++at;
      continue;
    }
    if (length > 1) {
      out.append(text, at, length);
      at += length;
      continue;
    }
    ++at;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f)
          out += fmt::format("\\u{:04x}", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string Json::dump(int indent) const {
  std::string out;
  write(out, indent, 0);
  return out;
}

void Json::write(std::string& out, int indent, int depth) const {
  const auto newline = [&](int d) {
    if (indent <= 0) return;
    out += '\n';
    out.append(static_cast<std::size_t>(indent * d), ' ');
  };
  if (std::holds_alternative<std::nullptr_t>(value_)) {
    out += "null";
  } else if (const bool* b = std::get_if<bool>(&value_)) {
    out += *b ? "true" : "false";
  } else if (const std::int64_t* i = std::get_if<std::int64_t>(&value_)) {
    out += fmt::format("{}", *i);
  } else if (const double* d = std::get_if<double>(&value_)) {
    // Negative zero (-1e-400 reads as -0.0) is written "0": "-0" would read
    // back as the integer 0 and dump differently; its sign means nothing here.
    out += !std::isfinite(*d) ? "null" : *d == 0 ? "0" : fmt::format("{}", *d);
  } else if (const std::string* s = std::get_if<std::string>(&value_)) {
    out += json_quote(*s);
  } else if (const Array* a = std::get_if<Array>(&value_)) {
    if (a->empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (std::size_t k = 0; k < a->size(); ++k) {
      if (k > 0) out += ',';
      newline(depth + 1);
      (*a)[k].write(out, indent, depth + 1);
    }
    newline(depth);
    out += ']';
  } else {
    const Object& o = std::get<Object>(value_);
    if (o.empty()) {
      out += "{}";
      return;
    }
    out += '{';
    for (std::size_t k = 0; k < o.size(); ++k) {
      if (k > 0) out += ',';
      newline(depth + 1);
      out += json_quote(o[k].first);
      out += indent > 0 ? ": " : ":";
      o[k].second.write(out, indent, depth + 1);
    }
    newline(depth);
    out += '}';
  }
}

}  // namespace moeplan::io

namespace moeplan::io {
namespace {

// Recursive-descent parser over the whole text; depth is bounded so hostile
// input cannot exhaust the stack, and the count of values so that it cannot
// exhaust memory.
class JsonParser {
 public:
  JsonParser(const std::string& text, const std::string& path, std::size_t max_values)
      : text_(text), path_(path), max_values_(max_values) {}

  Json document() {
    Json value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the JSON value");
    return value;
  }

 private:
  // The line and column (1-based, bytes) of offset `at`: counted only when an
  // error is thrown, so that parsing keeps no running count.
  [[noreturn]] void fail_at(std::size_t at, const std::string& reason) const {
    int line = 1, column = 1;
    for (std::size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw Error(ErrorKind::Input, "invalid JSON: " + reason, "", SourceLocation{path_, line, column});
  }
  [[noreturn]] void fail(const std::string& reason) const { fail_at(pos_, reason); }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(fmt::format("expected '{}'", c));
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) == 0) {
      pos_ += w.size();
      return true;
    }
    return false;
  }
  bool digit_at(std::size_t at) const { return at < text_.size() && text_[at] >= '0' && text_[at] <= '9'; }

  Json parse_value(int depth) {
    if (depth > 256) fail("nesting too deep");
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end of input");
    // Counted before the value is made: a document is refused at its first
    // value past the bound, having held no more than the bound.
    if (++values_ > max_values_)
      fail(fmt::format("more than {} values (object members and array elements), the limit of a JSON document",
                       max_values_));
    const char c = text_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return Json(parse_string());
    if (literal("true")) return Json(true);
    if (literal("false")) return Json(false);
    if (literal("null")) return Json(nullptr);
    return parse_number();
  }

  Json parse_object(int depth) {
    ++pos_;
    Json object = Json::object();
    if (consume('}')) return object;
    do {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a key string");
      std::string key = parse_string();
      expect(':');
      // A key written twice keeps its first place and takes its last value,
      // as Python's json module (which writes and reads these files) has it.
      object.set(key, parse_value(depth + 1));
    } while (consume(','));
    expect('}');
    return object;
  }

  Json parse_array(int depth) {
    ++pos_;
    Json array = Json::array();
    if (consume(']')) return array;
    do {
      array.push(parse_value(depth + 1));
    } while (consume(','));
    expect(']');
    return array;
  }

  unsigned parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("short \\u escape");
    unsigned code = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = text_[pos_++];
      code <<= 4;
      if (h >= '0' && h <= '9')
        code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        code |= static_cast<unsigned>(h - 'A' + 10);
      else
        fail("bad hex digit in \\u escape");
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string parse_string() {
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail_at(pos_ - 1, "control character in string");
      if (c != '\\') {
        // RFC 8259 section 8.1: JSON text is UTF-8. A stray byte accepted here
        // would be written back as U+FFFD, so the value would not round-trip.
        if (static_cast<unsigned char>(c) >= 0x80) {
          const std::size_t length = utf8_sequence_length(text_, pos_ - 1);
          if (length == 0) fail_at(pos_ - 1, invalid_utf8_reason(text_, pos_ - 1));
          out.append(text_, pos_ - 1, length);
          pos_ += length - 1;
          continue;
        }
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned code = parse_hex4();
          // A high surrogate followed by an escaped low one is one code point
          // beyond the BMP; a lone surrogate is no character: U+FFFD.
          if (code >= 0xD800 && code <= 0xDBFF && text_.compare(pos_, 2, "\\u") == 0) {
            const std::size_t back = pos_;
            pos_ += 2;
            const unsigned low = parse_hex4();
            if (low >= 0xDC00 && low <= 0xDFFF)
              code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            else
              pos_ = back;
          }
          if (code >= 0xD800 && code <= 0xDFFF) code = 0xFFFD;
          append_utf8(out, code);
          break;
        }
        default:
          fail("unknown escape");
      }
    }
  }

  // RFC 8259 section 6: -? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?.
  // strtod alone would take more (+1, 01, 1., .5, 0x10, inf, nan), which
  // Python's json module and every other strict reader refuse.
  Json parse_number() {
    const std::size_t start = pos_;
    const auto bad = [&](const char* why) {
      // The token as far as the next separator, for the message (quoted_for_error shortens it).
      const std::size_t end = std::min(text_.find_first_of(" \t\r\n,:]}", start), text_.size());
      fail_at(start, fmt::format("malformed number {}: {}", quoted_for_error(text_.substr(start, end - start)), why));
    };
    const char first = text_[pos_];
    if (first != '-' && !digit_at(pos_)) {
      if (first == '+' || first == '.') bad("a number starts with '-' or a digit");
      fail("expected a value");
    }
    if (first == '-') ++pos_;
    if (!digit_at(pos_)) bad("a digit must follow '-'");
    if (text_[pos_] == '0') {
      ++pos_;
      if (digit_at(pos_)) bad("no leading zeros");
    } else {
      while (digit_at(pos_)) ++pos_;
    }
    bool integral = true;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (!digit_at(pos_)) bad("a digit must follow '.'");
      while (digit_at(pos_)) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (!digit_at(pos_)) bad("a digit must follow the exponent's 'e'");
      while (digit_at(pos_)) ++pos_;
    }
    // A letter, a point or a sign right after is the rest of a token the
    // grammar has no room for (0x10, 1.5.3, 1e5e3, 2-1): one error, not two tokens.
    if (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
                                text_[pos_] == '+' || text_[pos_] == '-'))
      bad("not a JSON number (RFC 8259)");
    const std::string token = text_.substr(start, pos_ - start);
    char* end = nullptr;
    if (integral) {
      // Beyond int64 strtoll saturates: such integers are read as doubles instead.
      errno = 0;
      const long long v = std::strtoll(token.c_str(), &end, 10);
      if (*end == '\0' && errno != ERANGE) return Json(static_cast<std::int64_t>(v));
    }
    const double d = std::strtod(token.c_str(), &end);
    MOEPLAN_CHECK(*end == '\0', "strtod reads every number of the JSON grammar whole");
    // Infinity has no JSON form: dump() would write it as null.
    if (!std::isfinite(d)) fail_at(start, fmt::format("number {} out of range", quoted_for_error(token)));
    return Json(d);
  }

  const std::string& text_;
  const std::string& path_;
  std::size_t max_values_;
  std::size_t pos_ = 0;
  std::size_t values_ = 0;
};

}  // namespace

Json Json::parse(const std::string& text, const std::string& path, std::size_t max_values) {
  return JsonParser(text, path, max_values).document();
}

const Json* Json::find(const std::string& key) const {
  if (!is_object()) return nullptr;
  return std::get<Object>(value_).find(key);
}

const Json::Array& Json::as_array() const {
  MOEPLAN_CHECK(is_array(), "JSON value is not an array");
  return std::get<Array>(value_);
}
const Json::Object& Json::as_object() const {
  MOEPLAN_CHECK(is_object(), "JSON value is not an object");
  return std::get<Object>(value_);
}
const std::string& Json::as_string() const {
  MOEPLAN_CHECK(is_string(), "JSON value is not a string");
  return std::get<std::string>(value_);
}
double Json::as_number() const {
  if (const std::int64_t* i = std::get_if<std::int64_t>(&value_)) return static_cast<double>(*i);
  MOEPLAN_CHECK(std::holds_alternative<double>(value_), "JSON value is not a number");
  return std::get<double>(value_);
}
bool Json::as_bool() const {
  MOEPLAN_CHECK(is_bool(), "JSON value is not a boolean");
  return std::get<bool>(value_);
}

}  // namespace moeplan::io
