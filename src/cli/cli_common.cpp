#include <cmath>
#include <cstdlib>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/utf8.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {

std::string flag_of(std::string_view field) {
  if (field.rfind(kRequestField, 0) != 0) return std::string(field);
  std::string flag = "--" + std::string(field.substr(kRequestField.size()));
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

void report_error(std::ostream& err, const Error& e) {
  err << "moeplan: error: " << format_error(e, flag_of) << '\n';
  err.flush();
}

int exit_code_of(const Error& e) { return e.kind() == ErrorKind::Runtime ? 1 : 2; }

std::vector<io::Override> parse_overrides(const std::vector<std::string>& values) {
  std::vector<io::Override> overrides;
  for (const std::string& v : values) overrides.push_back(io::parse_override(v));
  return overrides;
}

void check_stdout_outputs(bool json, const std::vector<std::pair<std::string, std::string>>& options) {
  std::string first;
  for (const auto& [option, path] : options) {
    if (path != "-") continue;
    if (json)
      throw Error(ErrorKind::Input,
                  fmt::format("{} -: standard output would carry both the output and the --json document; name a "
                              "file or drop --json",
                              option));
    if (!first.empty())
      throw Error(ErrorKind::Input,
                  fmt::format("{} -: standard output already carries the {} output; name a file", option, first));
    first = option;
  }
}

void check_utf8_option(const std::string& option, const std::string& value) {
  if (const std::size_t at = io::first_invalid_utf8(value); at != std::string::npos)
    throw Error(ErrorKind::Input, fmt::format("{}: {}", option, io::invalid_utf8_reason(value, at)));
}

namespace {

// A validator of numbers on the command line: finite, and allowed by `zero_ok`.
CLI::Validator sign_validator(bool zero_ok) {
  return CLI::Validator(
      [zero_ok](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(value))
          return fmt::format("expected a number, got {}", quoted_for_error(text));
        if (zero_ok ? value < 0 : value <= 0)
          return fmt::format("{}, got {}", zero_ok ? "must not be negative" : "must be positive",
                             text.size() <= kQuotedForErrorMax ? text : quoted_for_error(text));
        return "";
      },
      zero_ok ? ">= 0" : "> 0");
}

}  // namespace

const CLI::Validator& positive() {
  static const CLI::Validator v = sign_validator(false);
  return v;
}

const CLI::Validator& non_negative() {
  static const CLI::Validator v = sign_validator(true);
  return v;
}

}  // namespace moeplan::cli
