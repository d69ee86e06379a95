// A simulated timeline as the report's page draws it: compact, six numbers a
// task, names once each.

#include <algorithm>
#include <map>

#include <moeplan/output/timeline_layout.hpp>
#include <moeplan/report/html_report.hpp>
#include <moeplan/sim/analysis.hpp>

namespace moeplan::report {

std::vector<std::int32_t> report_ranks(const dag::TaskGraph& g, const sim::Timeline& tl) {
  std::vector<std::int32_t> present;
  for (const dag::Resource& r : g.resources()) present.push_back(r.rank);
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  if (present.size() <= kReportRanksAllUpTo) return present;
  std::vector<std::int32_t> chosen(present.begin(), present.begin() + static_cast<std::ptrdiff_t>(kReportRanksAllUpTo));
  const std::int32_t critical = sim::summarize(g, tl).critical_rank.rank;
  if (!std::binary_search(chosen.begin(), chosen.end(), critical)) chosen.push_back(critical);
  return chosen;
}

io::Json timeline_to_json(const dag::TaskGraph& g, const sim::Timeline& tl, const std::vector<std::int32_t>& ranks) {
  std::vector<bool> shown(g.resources().size(), false);
  std::vector<std::int64_t> lane_of(g.resources().size(), -1);
  io::Json lanes = io::Json::array();
  std::int64_t lane = 0;
  for (std::size_t i = 0; i < g.resources().size(); ++i) {
    const dag::Resource& r = g.resources()[i];
    if (!std::binary_search(ranks.begin(), ranks.end(), r.rank)) continue;
    shown[i] = true;
    lane_of[i] = lane++;
    io::Json j = io::Json::object();
    j.set("rank", static_cast<std::int64_t>(r.rank));
    j.set("stream", r.name);
    lanes.push(std::move(j));
  }
  io::Json tasks = io::Json::array();
  io::Json names = io::Json::array();
  std::map<std::string, std::int64_t, std::less<>> name_index;
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    const auto resources = g.resources(t);
    if (std::none_of(resources.begin(), resources.end(), [&](dag::ResourceId r) { return shown[r]; })) continue;
    const std::string_view name = g.name(t);
    auto it = name_index.find(name);
    if (it == name_index.end()) {
      it = name_index.emplace(std::string(name), static_cast<std::int64_t>(name_index.size())).first;
      names.push(std::string(name));
    }
    for (dag::ResourceId r : resources) {
      if (!shown[r]) continue;
      tasks.push(lane_of[r]);
      tasks.push(tl.start_ms[t]);
      tasks.push(tl.end_ms[t]);
      tasks.push(static_cast<std::int64_t>(g.op(t)));
      tasks.push(static_cast<std::int64_t>(g.phase(t)));
      tasks.push(it->second);
    }
  }
  io::Json ops = io::Json::array();
  for (model::OpClass op : output::ops_present(g, shown)) ops.push(model::to_string(op));
  io::Json drawn = io::Json::array();
  for (std::int32_t r : ranks) drawn.push(static_cast<std::int64_t>(r));
  std::vector<std::int32_t> all;
  for (const dag::Resource& r : g.resources()) all.push_back(r.rank);
  std::sort(all.begin(), all.end());
  io::Json j = io::Json::object();
  j.set("iteration_ms", tl.makespan_ms);
  const std::optional<double> divider = output::phase_divider_ms(g, tl, shown);
  j.set("divider_ms", divider ? io::Json(*divider) : io::Json(nullptr));
  j.set("ranks", drawn);
  j.set("ranks_total", static_cast<std::int64_t>(std::unique(all.begin(), all.end()) - all.begin()));
  j.set("ops", ops);
  j.set("lanes", lanes);
  j.set("names", names);
  j.set("tasks", tasks);
  return j;
}

}  // namespace moeplan::report
