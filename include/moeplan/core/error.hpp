#pragma once
// Errors that cross module boundaries. Library code never prints or exits: it
// throws moeplan::Error, and the CLI maps the kind to an exit code (2 for bad
// input or usage and for a resource limit, 1 for a runtime failure).

#include <stdexcept>
#include <string>
#include <string_view>

namespace moeplan {

/// @brief Where in an input file something was found (1-based; 0 = unknown).
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

/// Input: the files or options are wrong. Limit: the request is valid but
/// passes a resource bound the user can raise or avoid (--max-memory); a
/// planner that skips invalid candidates must not skip these. Runtime: moeplan
/// or the system failed.
enum class ErrorKind { Input, Limit, Runtime };

/// @brief The one exception type of moeplan: a reason, and for input errors the field and file.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string reason, std::string field = {}, SourceLocation location = {});

  ErrorKind kind() const { return kind_; }
  const std::string& reason() const { return reason_; }
  /// Dotted field path inside the file, e.g. "moe.top_k" ("" when not about a field).
  const std::string& field() const { return field_; }
  const SourceLocation& location() const { return location_; }

  /// The same error placed in a file.
  Error located(SourceLocation location) const;
  /// The same error with its field path prefixed ("model" + "moe.top_k").
  Error prefixed(const std::string& prefix) const;

 private:
  ErrorKind kind_;
  std::string reason_;
  std::string field_;
  SourceLocation location_;
};

/// "FILE:LINE:COL: field.path: reason", leaving out the parts that are unknown.
std::string format_error(const Error& error);

/// Options of a request (a command's flags, a Python function's keywords) are
/// named by the edge that takes them, never by the library (docs/architecture.md,
/// "Library rules"): an error about one has the field "request.NAME", and a
/// reason that mentions one writes option_ref("request.NAME"). The edge names
/// them: the CLI "--name-with-dashes", the Python module "name=".
inline constexpr std::string_view kRequestField = "request.";
/// A mention of request option `field` ("request.tokens") inside a reason.
std::string option_ref(std::string_view field);
/// How an edge names a request option (its field, "request.NAME").
using OptionNamer = std::string (*)(std::string_view field);
/// `text` with every option_ref replaced by namer's name for it.
std::string name_options(std::string_view text, OptionNamer namer);
/// format_error with a request option's field, and every option_ref in the
/// reason, named by `namer`.
std::string format_error(const Error& error, OptionNamer namer);

/// A value the user gave, quoted for an error message: 'value', or when longer
/// than kQuotedForErrorMax bytes its first ones (cut at a UTF-8 character
/// boundary) then "... (N bytes)", so that an error stays one short line
/// whatever was typed. Line breaks and other control characters are written
/// as escapes (\n, \x01). Every user-supplied value quoted into an error
/// goes through it.
std::string quoted_for_error(std::string_view value);
inline constexpr std::size_t kQuotedForErrorMax = 60;

[[noreturn]] void throw_input_error(std::string field, std::string reason);
[[noreturn]] void throw_runtime_error(std::string reason);

namespace detail {
[[noreturn]] void check_failed(const char* condition, const char* file, int line, const std::string& message);
}  // namespace detail

}  // namespace moeplan

/// Internal invariant: a failure is a bug in moeplan, reported as a runtime error.
#define MOEPLAN_CHECK(condition, message)                                                         \
  do {                                                                                            \
    if (!(condition)) ::moeplan::detail::check_failed(#condition, __FILE__, __LINE__, (message)); \
  } while (false)
