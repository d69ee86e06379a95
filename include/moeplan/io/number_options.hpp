#pragma once
// The numbers a request takes from a person: every numeric option of every
// command and every numeric keyword of the Python module, in one table with
// its range and unit, read by one parser. The library names an option by its
// field ("request.seq_len"); the CLI spells it "--seq-len", Python "seq_len="
// (cli_context.hpp flag_of, the module's keyword_of). A number typed as text
// is decimal only (no hexadecimal, no inf or nan words, no spaces, not
// empty), finite and within the range; a number given as a number (a Python
// keyword, a library request) is held to the same range.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moeplan::io {

/// @brief One numeric option: what it counts and the values it takes.
struct NumberOption {
  std::string_view field;  ///< "request.seq_len"
  bool integer = true;     ///< whole numbers only
  double min = 1;          ///< the least value allowed
  bool min_exclusive = false;  ///< min itself is not allowed (days > 0)
  double max = 1;          ///< the largest value allowed
  std::string_view unit;   ///< "tokens", "GiB"; empty for a pure count
  std::string_view why;    ///< where the bound comes from
};

/// Every numeric option, in the order docs/cli.md lists them.
const std::vector<NumberOption>& number_options();

/// The option of `field`; a logic error (a bug, not input) when there is none.
const NumberOption& number_option(std::string_view field);

/// Reads `text` as the option of `field`: input Error on that field when it is
/// empty, not a decimal number (a whole one for an integer option), not
/// finite, or out of range.
double parse_number(std::string_view field, std::string_view text);
std::int64_t parse_integer(std::string_view field, std::string_view text);
/// As parse_number, for text whose unit the caller has read off ("2T": "2"
/// at 1e12): the range holds for `scale` times the number.
double parse_scaled_number(std::string_view field, std::string_view text, double scale);

/// Holds a number given as a number to the option's range (and to whole
/// numbers for an integer option): input Error on `field` otherwise.
void check_number(std::string_view field, double value);
/// The same, saying the value as `shown` (a Python int too large for a double to say exactly).
void check_number(std::string_view field, double value, const std::string& shown);

/// The range as the CLI's help and docs/cli.md say it: "1 to 134217728 tokens",
/// "above 0, at most 100000 days".
std::string range_text(const NumberOption& option);

/// docs/cli.md's table of the options, with `flag` spelling each field.
std::string number_options_markdown(std::string (*flag)(std::string_view field));

}  // namespace moeplan::io
