#include <cmath>
#include <cstdlib>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
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

void check_option_text(CLI::App& app) {
  const CLI::Validator text(
      [](std::string& value) -> std::string {
        if (value.empty()) return "is empty; give a value or leave the option out";
        if (const std::size_t at = io::first_invalid_utf8(value); at != std::string::npos)
          return io::invalid_utf8_reason(value, at);
        return "";
      },
      "");
  for (CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; }))
    for (CLI::Option* option : command->get_options([](const CLI::Option* o) { return o->get_type_size() > 0; }))
      if (!option->get_name().empty() && option->get_name()[0] == '-') option->check(text);
}

std::string cluster_name_of(const std::string& given) {
  try {
    return io::load_cluster(given).name;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Input) throw;
    throw Error(ErrorKind::Input,
                fmt::format("{} is not a cluster (a bundled name or a cluster file): {}", quoted_for_error(given),
                            e.reason()),
                "request.cluster");
  }
}

void check_utf8_option(const std::string& option, const std::string& value) {
  if (const std::size_t at = io::first_invalid_utf8(value); at != std::string::npos)
    throw Error(ErrorKind::Input, fmt::format("{}: {}", option, io::invalid_utf8_reason(value, at)));
}

}  // namespace moeplan::cli
