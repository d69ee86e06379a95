#include <moeplan/io/calibration_input.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

#include <moeplan/io/csv_cells.hpp>
#include "proto_text.hpp"

namespace moeplan::io {
namespace {

constexpr const char* kCsvHeader = "op,link,group,size,time_ms";

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

std::vector<std::string> split_fields(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, sep);) out.push_back(trim(cell));
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

[[noreturn]] void fail(const std::string& file, int line, int column, const std::string& field,
                       const std::string& reason) {
  throw Error(ErrorKind::Input, reason, field, SourceLocation{file, line, column});
}

double number(const std::string& text, const std::string& file, int line, int column, const std::string& field) {
  return decimal_cell(text, SourceLocation{file, line, column}, field);
}

bool is_compute(model::OpClass op) { return model::is_compute_op(op); }

std::optional<model::OpClass> op_from_name(const std::string& name) {
  // nccl-tests binaries: all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf.
  const std::pair<const char*, model::OpClass> table[] = {{"all_reduce", model::OpClass::AllReduce},
                                                          {"allreduce", model::OpClass::AllReduce},
                                                          {"all_gather", model::OpClass::AllGather},
                                                          {"allgather", model::OpClass::AllGather},
                                                          {"reduce_scatter", model::OpClass::ReduceScatter},
                                                          {"reducescatter", model::OpClass::ReduceScatter},
                                                          {"alltoall", model::OpClass::A2A},
                                                          {"all_to_all", model::OpClass::A2A},
                                                          {"sendrecv", model::OpClass::P2P}};
  for (const auto& [key, op] : table)
    if (name.find(key) != std::string::npos) return op;
  return std::nullopt;
}

}  // namespace

std::vector<model::TimingSample> read_timing_csv(const std::string& file, const std::string& text) {
  std::vector<model::TimingSample> samples;
  std::istringstream in(text);
  std::string line;
  int number_of_line = 0;
  bool header_seen = false;
  while (std::getline(in, line)) {
    ++number_of_line;
    const std::string content = trim(line);
    if (content.empty() || content[0] == '#') continue;
    if (!header_seen) {
      if (content != kCsvHeader)
        fail(file, number_of_line, 1, "header", fmt::format("expected the header '{}'", kCsvHeader));
      header_seen = true;
      continue;
    }
    const std::vector<std::string> cells = split_fields(content, ',');
    if (cells.size() != 5)
      fail(file, number_of_line, 1, "", fmt::format("expected 5 comma-separated values, got {}", cells.size()));
    model::TimingSample s;
    s.where = SourceLocation{file, number_of_line, 1};
    const auto op = model::op_class_from_string(cells[0]);
    if (!op) fail(file, number_of_line, 1, "op", fmt::format("unknown operation {}", quoted_for_error(cells[0])));
    s.op = *op;
    if (is_compute(s.op)) {
      if (!cells[1].empty() && cells[1] != "local")
        fail(file, number_of_line, 1, "link", "compute operations use link 'local' (or leave it empty)");
      s.link = model::LinkClass::Local;
    } else {
      const auto link = model::link_class_from_string(cells[1]);
      if (!link || *link == model::LinkClass::Local)
        fail(file, number_of_line, 1, "link",
             fmt::format("expected intra or inter, got {}", quoted_for_error(cells[1])));
      s.link = *link;
    }
    const double group = number(cells[2], file, number_of_line, 1, "group");
    if (group < 1 || group > 1048576 || group != std::floor(group))
      fail(file, number_of_line, 1, "group",
           fmt::format("expected a whole number in 1..1048576, got {}", quoted_for_error(cells[2])));
    s.group = static_cast<std::int64_t>(group);
    s.size = number(cells[3], file, number_of_line, 1, "size");
    s.time_ms = number(cells[4], file, number_of_line, 1, "time_ms");
    if (s.size < 0) fail(file, number_of_line, 1, "size", "must not be negative");
    if (s.time_ms < 0) fail(file, number_of_line, 1, "time_ms", "must not be negative");
    if (s.size > model::kMaxSampleSize)
      fail(file, number_of_line, 1, "size", fmt::format("{} is implausible: at most {}", s.size, model::kMaxSampleSize));
    if (s.time_ms > model::kMaxSampleTimeMs)
      fail(file, number_of_line, 1, "time_ms",
           fmt::format("{} ms is implausible for one operation: at most {} ms", s.time_ms, model::kMaxSampleTimeMs));
    samples.push_back(s);
  }
  if (!header_seen) fail(file, 1, 1, "header", fmt::format("empty input; expected the header '{}'", kCsvHeader));
  if (samples.empty()) fail(file, number_of_line, 1, "", "no samples after the header");
  return samples;
}

std::vector<model::TimingSample> read_nccl_tests(const std::string& file, const std::string& text,
                                                 const NcclTestsOptions& options) {
  std::optional<model::OpClass> op = options.op;
  if (op && is_compute(*op))
    fail(file, 1, 1, "op", fmt::format("nccl-tests times collectives, not {}", model::to_string(*op)));
  if (!op) op = op_from_name(std::filesystem::path(file).filename().string());
  std::map<std::string, std::int64_t> hosts;  // ranks per host name
  std::int64_t ranks = 0;
  struct Row {
    double size_bytes;
    double time_us;
    int line;
  };
  std::vector<Row> rows;
  std::istringstream in(text);
  std::string line;
  int at = 0;
  bool table_seen = false;
  while (std::getline(in, line)) {
    ++at;
    const std::vector<std::string> w = words(line);
    if (w.empty()) continue;
    if (w[0] == "#") {
      // "# Collective test starting: all_reduce_perf" (nccl-tests >= 2.13)
      if (w.size() >= 5 && w[1] == "Collective" && !options.op)
        if (auto named = op_from_name(w[4])) op = named;
      // "#  Rank  0 Group  0 Pid  1234 on host device  0 [0x18] NVIDIA ..."
      if (w.size() >= 9 && w[1] == "Rank" && w[7] == "on") {
        ++ranks;
        ++hosts[w[8]];
      }
      if (line.find("out-of-place") != std::string::npos) table_seen = true;
      continue;
    }
    if (!table_seen) fail(file, at, 1, "", "data row before the nccl-tests table header ('out-of-place')");
    // size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong
    if (w.size() != 12 && w.size() != 13)
      fail(file, at, 1, "", fmt::format("expected 12 or 13 columns in an nccl-tests row, got {}", w.size()));
    const std::size_t time_column = options.use_in_place ? w.size() - 4 : w.size() - 8;
    const double size = number(w[0], file, at, 1, "size");
    const double time_us =
        number(w[time_column], file, at, 1, options.use_in_place ? "in-place time" : "out-of-place time");
    if (size < 0 || time_us < 0) fail(file, at, 1, "size", "size and time must not be negative");
    if (size > model::kMaxSampleSize)
      fail(file, at, 1, "size", fmt::format("{} bytes is implausible: at most {}", size, model::kMaxSampleSize));
    if (time_us > model::kMaxSampleTimeMs * 1000.0)
      fail(file, at, 1, options.use_in_place ? "in-place time" : "out-of-place time",
           fmt::format("{} us is implausible for one collective: at most {} ms", time_us, model::kMaxSampleTimeMs));
    // nccl-tests checks the results (-c 1, its default) and counts wrong
    // elements in the #wrong columns, "N/A" when not checked. A run that
    // computed wrong values is broken, and its times are not timings to fit;
    // both results of the row count (the in-place run shares the setup).
    for (const auto& [column, which] : {std::pair{w.size() - 5, "out-of-place"}, {w.size() - 1, "in-place"}}) {
      if (w[column] == "N/A") continue;
      const double wrong = number(w[column], file, at, 1, "#wrong");
      if (wrong != 0)
        fail(file, at, 1, "#wrong",
             fmt::format("{} wrong values in the {} result: a run with wrong results is not a timing to fit",
                         w[column], which));
    }
    rows.push_back({size, time_us, at});
  }
  if (!table_seen) fail(file, 1, 1, "", "not nccl-tests output: no 'out-of-place' table header");
  if (rows.empty()) fail(file, at, 1, "", "the nccl-tests table has no rows");
  if (!op)
    fail(file, 1, 1, "op",
         fmt::format("cannot tell the collective: name the file after the nccl-tests binary (all_reduce_perf ...) "
                     "or give {}",
                     option_ref("request.op")));
  const std::int64_t group = options.group.value_or(ranks);
  if (group < 1)
    fail(file, 1, 1, "group", fmt::format("no '#  Rank' lines to count the ranks; give {}", option_ref("request.group")));
  const model::LinkClass link =
      options.link.value_or(hosts.size() > 1 ? model::LinkClass::Inter : model::LinkClass::Intra);
  // The most ranks any host ran tells how the group sat on nodes, unless a
  // given link says otherwise (containers can share one host name).
  std::optional<std::int64_t> ranks_per_node;
  if (!options.group && !hosts.empty() && (link == model::LinkClass::Inter) == (hosts.size() > 1)) {
    ranks_per_node = 0;
    for (const auto& [host, count] : hosts) ranks_per_node = std::max(*ranks_per_node, count);
  }
  std::vector<model::TimingSample> samples;
  for (const Row& r : rows) {
    model::TimingSample s;
    s.op = *op;
    s.link = link;
    s.group = group;
    s.ranks_per_node = ranks_per_node;
    s.size = r.size_bytes;
    s.time_ms = r.time_us / 1000.0;  // nccl-tests prints microseconds
    s.where = SourceLocation{file, r.line, 1};
    samples.push_back(s);
  }
  return samples;
}

std::vector<model::TimingSample> read_calibration_file(const std::string& path, const NcclTestsOptions& options) {
  const std::string text = read_text_file(path);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::string content = trim(line);
    if (content.empty() || (content[0] == '#' && content.find("out-of-place") == std::string::npos &&
                            content.find("nThread") == std::string::npos))
      continue;
    if (content == kCsvHeader) return read_timing_csv(path, text);
    break;
  }
  if (text.find("out-of-place") != std::string::npos) return read_nccl_tests(path, text, options);
  throw Error(ErrorKind::Input, fmt::format("neither a timing CSV (header '{}') nor nccl-tests output", kCsvHeader), "",
              SourceLocation{path, 1, 1});
}

}  // namespace moeplan::io
