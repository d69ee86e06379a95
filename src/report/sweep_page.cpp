// What the report of a sweep shows: its rows as columns of indices and
// numbers, which the page aggregates into heat maps (FSMoE Table 4's
// speed-ups by configuration) for the axes a reader picks.

#include <map>

#include <moeplan/core/version.hpp>
#include <moeplan/report/html_report.hpp>

namespace moeplan::report {
namespace {

// Values in first-seen order, each row's value as an index into them.
class Levels {
 public:
  std::int64_t index(const std::string& value) {
    const auto [it, added] = index_.emplace(value, static_cast<std::int64_t>(values_.size()));
    if (added) values_.push_back(value);
    return it->second;
  }
  std::size_t size() const { return values_.size(); }
  io::Json values() const {
    io::Json out = io::Json::array();
    for (const std::string& v : values_) out.push(v);
    return out;
  }

 private:
  std::map<std::string, std::int64_t> index_;
  std::vector<std::string> values_;
};

io::Json optional_number(const std::optional<double>& v) { return v ? io::Json(*v) : io::Json(nullptr); }

}  // namespace

io::Json sweep_report_data(const output::SweepTable& table, const std::string& input) {
  Levels scenarios, schedules, points;
  std::vector<Levels> axis_levels(table.axes.size());
  io::Json point = io::Json::array(), scenario = io::Json::array(), schedule = io::Json::array(),
           iteration = io::Json::array(), vs_none = io::Json::array(), vs_tutel = io::Json::array();
  std::vector<io::Json> axis_rows(table.axes.size(), io::Json::array());
  for (const output::SweepCsvRow& row : table.rows) {
    point.push(row.point);
    points.index(std::to_string(row.point));
    scenario.push(scenarios.index(row.scenario));
    schedule.push(schedules.index(row.schedule));
    for (std::size_t a = 0; a < table.axes.size(); ++a) axis_rows[a].push(axis_levels[a].index(row.axis_values[a]));
    iteration.push(optional_number(row.iteration_ms));
    vs_none.push(optional_number(row.speedup_vs_none));
    vs_tutel.push(optional_number(row.speedup_vs_tutel));
  }
  io::Json axes = io::Json::array(), axes_rows = io::Json::array();
  for (std::size_t a = 0; a < table.axes.size(); ++a) {
    io::Json axis = io::Json::object();
    axis.set("name", table.axes[a]);
    axis.set("values", axis_levels[a].values());
    axes.push(std::move(axis));
    axes_rows.push(std::move(axis_rows[a]));
  }
  io::Json rows = io::Json::object();
  rows.set("point", point);
  rows.set("scenario", scenario);
  rows.set("schedule", schedule);
  rows.set("axes", axes_rows);
  rows.set("iteration_ms", iteration);
  rows.set("speedup_vs_none", vs_none);
  rows.set("speedup_vs_tutel", vs_tutel);
  io::Json sweep = io::Json::object();
  sweep.set("axes", axes);
  sweep.set("scenarios", scenarios.values());
  sweep.set("schedules", schedules.values());
  sweep.set("points", static_cast<std::int64_t>(points.size()));
  sweep.set("rows", rows);
  io::Json j = io::Json::object();
  j.set("kind", "sweep");
  j.set("title", "moeplan report: sweep " + input.substr(input.rfind('/') + 1));
  j.set("input", input);
  j.set("version", std::string("moeplan ") + kVersion);
  j.set("sweep", sweep);
  return j;
}

}  // namespace moeplan::report
