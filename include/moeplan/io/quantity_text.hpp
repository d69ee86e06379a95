#pragma once
// Quantities as people write them on a command line or in a Python call: a
// token count with a decimal unit ("2T", "500B") and a count or range of
// counts ("64..4096"). The edges (CLI, Python) parse them; the library takes numbers.

#include <cstdint>
#include <string>
#include <utility>

namespace moeplan::io {

/// A token count: a decimal number with an optional unit K (1e3), M (1e6), B
/// or G (1e9), T (1e12): "2T", "500B", "1.5e12". Input Error on `field` (a
/// numeric option of io/number_options.hpp, whose range the count must be in)
/// when it is not one.
double parse_token_count(const std::string& text, const std::string& field);

/// "N" or "LO..HI" (whole numbers in the range of `field`, a numeric option of
/// io/number_options.hpp; LO <= HI). Input Error on `field` otherwise.
std::pair<std::int64_t, std::int64_t> parse_count_range(const std::string& text, const std::string& field);

}  // namespace moeplan::io
