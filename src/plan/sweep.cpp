#include <moeplan/plan/sweep.hpp>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/family_rules.hpp>
#include <moeplan/plan/family_registry.hpp>
#include <moeplan/plan/simulate.hpp>

namespace moeplan::plan {

std::vector<PointResult> evaluate_point(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                        const std::vector<std::string>& requested, unsigned threads) {
  const Family& family = family_of(s);
  const std::vector<std::string>& all = family.rules().schedules();
  std::vector<std::string> names;
  if (requested.empty()) {
    for (const std::string& name : all)
      if (!family.rules().ruled_out(s, name)) names.push_back(name);
  } else {
    for (const std::string& name : requested) {
      if (std::find(all.begin(), all.end(), name) == all.end())
        throw Error(ErrorKind::Input,
                    fmt::format("{} is not a schedule of scenario {} (family {}: {})", quoted_for_error(name), s.name,
                                s.schedule.family, model::join_names(all)),
                    "schedules");
      if (auto why = family.rules().ruled_out(s, name))
        throw Error(ErrorKind::Input, fmt::format("scenario {}: {}", s.name, *why), "schedules");
      names.push_back(name);
    }
  }
  return family.sweep_point(s, costs, names, threads);
}

void check_sweep_schedules(const io::LoadedSweep& sweep) {
  std::vector<std::string> seen;
  for (const io::SweepBase& point : sweep.bases) {
    if (std::find(seen.begin(), seen.end(), point.scenario) != seen.end()) continue;
    seen.push_back(point.scenario);
    const model::ScenarioSpec base = io::load_scenario(point.scenario);
    const std::vector<std::string>& own = model::family_rules(base.schedule.family).schedules();
    for (std::size_t i = 0; i < sweep.schedules.size(); ++i)
      if (std::find(own.begin(), own.end(), sweep.schedules[i]) == own.end())
        throw Error(
            ErrorKind::Input,
            fmt::format("{} is not a schedule of scenario {} (family {}: {})", quoted_for_error(sweep.schedules[i]),
                        point.scenario, base.schedule.family, model::join_names(own)),
            fmt::format("schedules[{}]", i), SourceLocation{sweep.path, 0, 0});
  }
}

std::vector<SweepRow> evaluate_sweep_point(const io::LoadedSweep& sweep, std::size_t i, const model::RunLimits& limits) {
  const io::SweepPoint point = sweep.point(i);
  model::ScenarioSpec spec = io::load_sweep_point(point);
  spec.limits = limits;
  refuse_noise(spec, "sweep");
  refuse_search(spec, "sweep");
  if (!spec.profile)
    throw Error(ErrorKind::Input, fmt::format("scenario {} names no cost profile", quoted_for_error(spec.name)),
                "profile_ref");
  const cost::CostModel costs(*spec.profile);
  // The points are the parallel work: one thread per point.
  const std::vector<PointResult> results = evaluate_point(spec, costs, sweep.schedules, 1);
  double none_ms = NAN, tutel_ms = NAN;
  for (const PointResult& r : results) {
    if (r.evaluation.schedule == "none") none_ms = r.evaluation.iteration_ms;
    if (r.evaluation.schedule == "tutel") tutel_ms = r.evaluation.iteration_ms;
  }
  const std::map<std::string, std::string> labels(point.labels.begin(), point.labels.end());
  std::vector<SweepRow> rows;
  for (const PointResult& r : results) {
    SweepRow row;
    row.point = i;
    row.scenario = point.scenario;
    for (const std::string& column : sweep.columns) {
      const auto it = labels.find(column);
      row.labels.push_back(it == labels.end() ? "" : it->second);
    }
    row.evaluation = r.evaluation;
    // NaN without a baseline row or with a zero-length iteration: an empty cell, left out of the means.
    row.speedup_vs_none = none_ms / r.evaluation.iteration_ms;
    row.speedup_vs_tutel = tutel_ms / r.evaluation.iteration_ms;
    row.knobs = r.knobs;
    rows.push_back(std::move(row));
  }
  return rows;
}

void SweepSummary::add(const std::string& schedule, double vs_none, double vs_tutel) {
  auto it = std::find(order_.begin(), order_.end(), schedule);
  if (it == order_.end()) {
    order_.push_back(schedule);
    totals_.emplace_back();
    it = order_.end() - 1;
  }
  Totals& t = totals_[static_cast<std::size_t>(it - order_.begin())];
  ++t.points;
  // Means of the finite values seen: a point without a baseline is left out.
  if (std::isfinite(vs_none)) {
    t.sum_none += vs_none;
    ++t.n_none;
  }
  if (const double l = std::log(vs_none); std::isfinite(l)) {
    t.sum_log_none += l;
    ++t.n_log_none;
  }
  if (std::isfinite(vs_tutel)) {
    t.sum_tutel += vs_tutel;
    ++t.n_tutel;
  }
}

std::vector<SweepSummary::Entry> SweepSummary::entries() const {
  auto mean = [](double sum, std::size_t n) { return n > 0 ? sum / static_cast<double>(n) : NAN; };
  std::vector<Entry> out;
  for (std::size_t i = 0; i < order_.size(); ++i) {
    const Totals& t = totals_[i];
    out.push_back({order_[i], t.points, mean(t.sum_none, t.n_none), std::exp(mean(t.sum_log_none, t.n_log_none)),
                   mean(t.sum_tutel, t.n_tutel)});
  }
  return out;
}

}  // namespace moeplan::plan
