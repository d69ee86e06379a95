#include <moeplan/output/sweep_csv.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

#include <moeplan/io/csv_cells.hpp>
#include <moeplan/io/text_file.hpp>
#include <moeplan/io/utf8.hpp>

namespace moeplan::output {
namespace {

// One record of the file: its cells and where each starts (line, column; 1-based).
struct Record {
  std::vector<std::string> cells;
  std::vector<std::pair<int, int>> at;
};

// Splits RFC 4180 records: cells separated by commas, a quoted cell may hold
// commas, line breaks and doubled quotes; "\r\n" ends a record as "\n" does.
// Blank lines are skipped.
std::vector<Record> records(const std::string& path, const std::string& text) {
  std::vector<Record> out;
  Record current;
  std::string cell;
  int line = 1, column = 1, cell_line = 1, cell_column = 1;
  bool quoted = false, any = false;
  auto end_cell = [&] {
    current.cells.push_back(std::move(cell));
    current.at.emplace_back(cell_line, cell_column);
    cell.clear();
    cell_line = line;
    cell_column = column;
  };
  auto end_record = [&] {
    if (any) {
      end_cell();
      out.push_back(std::move(current));
    }
    current = Record{};
    any = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
        column += 2;
        continue;
      }
      if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
      if (c == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
      continue;
    }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    if (c == '\n') {
      ++line;
      column = 1;
      end_record();
      cell_line = line;
      cell_column = column;
      continue;
    }
    any = true;
    ++column;
    if (c == ',') {
      end_cell();
    } else if (c == '"' && cell.empty()) {
      quoted = true;
    } else {
      cell += c;
    }
  }
  if (quoted)
    throw Error(ErrorKind::Input, "a quoted cell is not closed before the end of the file", "",
                SourceLocation{path, cell_line, cell_column});
  end_record();
  return out;
}

// RFC 4180 leaves a CSV's encoding to its writer; moeplan's write UTF-8. The
// report carries the cells into a page as JSON, where a byte that is not UTF-8
// would become U+FFFD unseen: such a cell is an error at its line and column,
// naming its column (the header's cell), the byte and its offset in the cell.
void check_utf8(const std::string& path, const Record& r, const Record& header, bool is_header) {
  for (std::size_t k = 0; k < r.cells.size(); ++k) {
    const std::size_t bad = io::first_invalid_utf8(r.cells[k]);
    if (bad == std::string::npos) continue;
    const std::string field = is_header ? "header" : k < header.cells.size() ? header.cells[k] : "";
    throw Error(ErrorKind::Input, io::invalid_utf8_reason(r.cells[k], bad), field,
                SourceLocation{path, r.at[k].first, r.at[k].second});
  }
}

constexpr const char* kRequired[] = {"point", "scenario", "schedule", "iteration_ms", "speedup_vs_none",
                                     "speedup_vs_tutel"};

}  // namespace

SweepTable parse_sweep_csv(const std::string& path, const std::string& text) {
  const std::vector<Record> all = records(path, text);
  if (all.empty())
    throw Error(ErrorKind::Input, "no header line: not a sweep CSV (moeplan sweep SWEEP -o F.csv writes one)", "",
                SourceLocation{path, 1, 1});
  const Record& header = all.front();
  for (const Record& r : all) check_utf8(path, r, header, &r == &header);
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < header.cells.size(); ++i) column.emplace(header.cells[i], i);
  for (const char* name : kRequired)
    if (!column.count(name))
      throw Error(ErrorKind::Input,
                  fmt::format("the header has no column '{}': not a sweep CSV (moeplan sweep SWEEP -o F.csv "
                              "writes point, scenario, the axes, schedule, iteration_ms, ...)",
                              name),
                  "header", SourceLocation{path, 1, 1});
  const std::size_t scenario = column.at("scenario"), schedule = column.at("schedule");
  if (schedule <= scenario)
    throw Error(ErrorKind::Input, "the axis columns lie between 'scenario' and 'schedule', which comes first here",
                "header", SourceLocation{path, 1, 1});
  SweepTable table;
  table.path = path;
  table.axes.assign(header.cells.begin() + static_cast<std::ptrdiff_t>(scenario) + 1,
                    header.cells.begin() + static_cast<std::ptrdiff_t>(schedule));
  if (all.size() < 2)
    throw Error(ErrorKind::Input, "no rows after the header: the sweep wrote no point", "",
                SourceLocation{path, 1, 1});
  auto number = [&](const Record& r, const char* name) -> std::optional<double> {
    const auto it = column.find(name);
    if (it == column.end() || r.cells[it->second].empty()) return std::nullopt;
    const auto [line, col] = r.at[it->second];
    return io::decimal_cell(r.cells[it->second], SourceLocation{path, line, col}, name);
  };
  for (std::size_t i = 1; i < all.size(); ++i) {
    const Record& r = all[i];
    if (r.cells.size() != header.cells.size())
      throw Error(ErrorKind::Input,
                  fmt::format("expected {} comma-separated cells (the header's), got {}", header.cells.size(),
                              r.cells.size()),
                  "", SourceLocation{path, r.at.front().first, 1});
    SweepCsvRow row;
    const std::size_t p = column.at("point");
    const double point = io::decimal_cell(r.cells[p], SourceLocation{path, r.at[p].first, r.at[p].second}, "point");
    if (point < 0 || point != std::floor(point) || point > 1e15)
      throw Error(ErrorKind::Input, fmt::format("expected a whole number >= 0, got {}", quoted_for_error(r.cells[p])),
                  "point", SourceLocation{path, r.at[p].first, r.at[p].second});
    row.point = static_cast<std::int64_t>(point);
    row.scenario = r.cells[scenario];
    row.axis_values.assign(r.cells.begin() + static_cast<std::ptrdiff_t>(scenario) + 1,
                           r.cells.begin() + static_cast<std::ptrdiff_t>(schedule));
    row.schedule = r.cells[schedule];
    if (row.schedule.empty())
      throw Error(ErrorKind::Input, "empty: every row names its schedule", "schedule",
                  SourceLocation{path, r.at[schedule].first, r.at[schedule].second});
    row.iteration_ms = number(r, "iteration_ms");
    row.compute_ms = number(r, "compute_ms");
    row.exposed_comm_ms = number(r, "exposed_comm_ms");
    row.speedup_vs_none = number(r, "speedup_vs_none");
    row.speedup_vs_tutel = number(r, "speedup_vs_tutel");
    table.rows.push_back(std::move(row));
  }
  return table;
}

SweepTable read_sweep_csv(const std::string& path) { return parse_sweep_csv(path, io::read_text_file(path)); }

}  // namespace moeplan::output
