#include <moeplan/io/csv_cells.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace moeplan::io {

double decimal_cell(const std::string& text, const SourceLocation& where, const std::string& field) {
  if (text.find_first_of("xX") != std::string::npos)
    throw Error(ErrorKind::Input, fmt::format("expected a decimal number, got {}", quoted_for_error(text)), field,
                where);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw Error(ErrorKind::Input, fmt::format("expected a finite number, got {}", quoted_for_error(text)), field,
                where);
  return v;
}

std::string csv_text_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
}  // namespace moeplan::io
