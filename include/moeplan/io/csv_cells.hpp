#pragma once
// The cells of the CSVs moeplan reads and writes, reader and writer side by
// side: a number it reads is a finite decimal, nothing else (timing samples,
// a sweep's rows); a text it writes is quoted as RFC 4180 asks (a sweep's
// rows, the capacity table).

#include <string>

#include <moeplan/core/error.hpp>

namespace moeplan::io {

/// The cell as a number; an input Error at `where` naming `field` when it is
/// empty, not wholly a decimal number (strtod's hexadecimal floats included:
/// no writer of these files writes them, so one is a corrupt cell), or not finite.
double decimal_cell(const std::string& text, const SourceLocation& where, const std::string& field);

/// `text` as one cell: as is, or in double quotes (each quote doubled) when it
/// holds a comma, a quote or a line break.
std::string csv_text_cell(const std::string& text);

}  // namespace moeplan::io
