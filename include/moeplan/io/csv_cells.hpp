#pragma once
// The one rule for a number in a CSV that moeplan reads (timing samples, a
// sweep's rows): a finite decimal, nothing else.

#include <string>

#include <moeplan/core/error.hpp>

namespace moeplan::io {

/// The cell as a number; an input Error at `where` naming `field` when it is
/// empty, not wholly a decimal number (strtod's hexadecimal floats included:
/// no writer of these files writes them, so one is a corrupt cell), or not finite.
double decimal_cell(const std::string& text, const SourceLocation& where, const std::string& field);

}  // namespace moeplan::io
