#include "routing_histogram.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>

#include "proto_text.hpp"

namespace moeplan::io {
namespace fs = std::filesystem;

namespace {

// Far above any real count (a trillion tokens per expert of one layer), so
// that sums over thousands of experts stay exact in a double (< 2^53).
constexpr double kMaxTokens = 1e12;

std::string trimmed(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

[[noreturn]] void fail(const std::string& path, int line, const std::string& reason) {
  throw Error(ErrorKind::Input, fmt::format("routing histogram: {}", reason), "", SourceLocation{path, line, 1});
}

}  // namespace

std::vector<double> read_routing_histogram(const std::string& path) {
  const std::string text = read_text_file(path);
  std::vector<double> tokens;
  bool header = false;
  int line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = trimmed(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    if (!header) {
      if (line != "expert,tokens")
        fail(path, line_no, fmt::format("expected the header line 'expert,tokens', got {}", quoted_for_error(line)));
      header = true;
      continue;
    }
    const std::size_t comma = line.find(',');
    if (comma == std::string::npos || line.find(',', comma + 1) != std::string::npos)
      fail(path, line_no, fmt::format("expected 'expert,tokens', got {}", quoted_for_error(line)));
    const std::string id_text = trimmed(line.substr(0, comma));
    const std::string count_text = trimmed(line.substr(comma + 1));
    errno = 0;
    char* id_end = nullptr;
    const long long id = std::strtoll(id_text.c_str(), &id_end, 10);
    if (id_text.empty() || *id_end != '\0' || errno == ERANGE)
      fail(path, line_no, fmt::format("expert id {} is not an integer", quoted_for_error(id_text)));
    if (id != static_cast<long long>(tokens.size()))
      fail(path, line_no,
           fmt::format("expert id {} out of order: expected {} (ids run 0, 1, 2, ... one line each)", id,
                       tokens.size()));
    errno = 0;
    char* count_end = nullptr;
    const double count = std::strtod(count_text.c_str(), &count_end);
    if (count_text.empty() || *count_end != '\0' || errno == ERANGE || !std::isfinite(count))
      fail(path, line_no, fmt::format("tokens {} is not a number", quoted_for_error(count_text)));
    if (count < 0) fail(path, line_no, fmt::format("tokens must not be negative, got {}", count_text));
    if (count > kMaxTokens) fail(path, line_no, fmt::format("tokens {} is implausible: at most 1e12", count_text));
    tokens.push_back(count);
    if (tokens.size() > 4096) fail(path, line_no, "more than 4096 experts (the largest model moeplan reads)");
  }
  if (!header) fail(path, line_no, "no 'expert,tokens' header line: the file is empty");
  if (tokens.empty()) fail(path, line_no, "no expert lines after the header");
  return tokens;
}

std::string resolve_routing_histogram(const std::string& ref, const std::string& referencing_file) {
  if (ref.empty()) throw Error(ErrorKind::Input, "an empty routing histogram reference");
  std::vector<std::string> candidates;
  auto add = [&](const fs::path& path) {
    for (const std::string& seen : candidates)
      if (seen == path.string()) return;
    candidates.push_back(path.string());
  };
  const bool bare = ref.find('/') == std::string::npos;
  const std::string with_extension = ref.size() >= 4 && ref.compare(ref.size() - 4, 4, ".csv") == 0 ? ref : ref + ".csv";
  if (fs::path(ref).is_absolute()) {
    add(ref);
  } else {
    if (!referencing_file.empty()) {
      const fs::path folder = fs::path(referencing_file).parent_path();
      add(folder / ref);
      if (bare) add(folder / with_extension);
    }
    add(ref);
    if (bare) {
      add(fs::path(data_root()) / "scenarios/routing" / ref);
      add(fs::path(data_root()) / "scenarios/routing" / with_extension);
    }
  }
  std::string tried;
  for (const std::string& candidate : candidates) {
    tried += (tried.empty() ? "" : ", ") + candidate;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  throw Error(ErrorKind::Input,
              fmt::format("no routing histogram named {}: tried {}", quoted_for_error(ref),
                          ref.size() > kQuotedForErrorMax ? "beside the file, as given and bundled" : tried));
}

}  // namespace moeplan::io
