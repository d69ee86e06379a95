#include <moeplan/report/sweep_report.hpp>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/families.hpp>
#include <moeplan/plan/simulate.hpp>

namespace moeplan::report {
namespace {

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A number cell; empty where the number is not finite (no baseline row, a
// zero-length iteration), so that no reader meets "nan" or "inf".
std::string number_cell(double value) { return std::isfinite(value) ? fmt::format("{}", value) : std::string(); }

// "tp1-cp4-pp8-vpp1-ep8-etp1-mb1", or empty.
std::string mapping_cell(const plan::PlannedKnobs& k) {
  if (!k.parallelism) return "";
  const model::ParallelSpec& p = *k.parallelism;
  return fmt::format("tp{}-cp{}-pp{}-vpp{}-ep{}-etp{}-mb{}", p.tp, p.cp, p.pp, p.vpp, p.ep, p.etp, k.micro_batch_size);
}

}  // namespace

void check_sweep_schedules(const io::LoadedSweep& sweep) {
  std::vector<std::string> seen;
  for (const io::SweepBase& point : sweep.bases) {
    if (std::find(seen.begin(), seen.end(), point.scenario) != seen.end()) continue;
    seen.push_back(point.scenario);
    const model::ScenarioSpec base = io::load_scenario(point.scenario);
    const std::vector<std::string>& own = model::family_schedules(base.schedule.family);
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
  plan::refuse_noise(spec, "sweep");
  if (!spec.profile)
    throw Error(ErrorKind::Input, fmt::format("scenario {} names no cost profile", quoted_for_error(spec.name)),
                "profile_ref");
  const cost::CostModel costs(*spec.profile);
  // The points are the parallel work: one thread per point.
  const std::vector<plan::PointResult> results = plan::evaluate_point(spec, costs, sweep.schedules, 1);
  double none_ms = NAN, tutel_ms = NAN;
  for (const plan::PointResult& r : results) {
    if (r.evaluation.schedule == "none") none_ms = r.evaluation.iteration_ms;
    if (r.evaluation.schedule == "tutel") tutel_ms = r.evaluation.iteration_ms;
  }
  const std::map<std::string, std::string> labels(point.labels.begin(), point.labels.end());
  std::vector<SweepRow> rows;
  for (const plan::PointResult& r : results) {
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

std::string sweep_csv_header(const io::LoadedSweep& sweep) {
  std::string csv = "point,scenario";
  for (const std::string& column : sweep.columns) csv += "," + csv_cell(column);
  return csv +
         ",schedule,degree,iteration_ms,forward_ms,backward_ms,compute_ms,comm_ms,exposed_comm_ms,bubble_ms,tasks,"
         "speedup_vs_none,speedup_vs_tutel,grad_partition_bytes,degree_forward,degree_backward,ar_chunk_bytes,"
         "mapping\n";
}

std::string sweep_csv_rows(const std::vector<SweepRow>& rows) {
  std::string out;
  for (const SweepRow& r : rows) {
    const plan::Evaluation& e = r.evaluation;
    out += fmt::format("{},{}", r.point, csv_cell(r.scenario));
    for (const std::string& label : r.labels) out += "," + csv_cell(label);
    out += fmt::format(",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_cell(e.schedule), e.degree,
                       number_cell(e.iteration_ms), number_cell(e.forward_ms), number_cell(e.backward_ms),
                       number_cell(e.compute_ms), number_cell(e.comm_ms), number_cell(e.exposed_comm_ms),
                       number_cell(e.bubble_ms), e.tasks, number_cell(r.speedup_vs_none),
                       number_cell(r.speedup_vs_tutel), number_cell(r.knobs.grad_partition_bytes),
                       r.knobs.degree_forward, r.knobs.degree_backward, r.knobs.ar_chunk_bytes,
                       csv_cell(mapping_cell(r.knobs)));
  }
  return out;
}

io::Json sweep_rows_to_json(const io::LoadedSweep& sweep, const std::vector<SweepRow>& rows) {
  io::Json out = io::Json::array();
  for (const SweepRow& r : rows) {
    const plan::Evaluation& e = r.evaluation;
    io::Json j = io::Json::object();
    j.set("point", static_cast<std::int64_t>(r.point));
    j.set("scenario", r.scenario);
    // Axis values as the sweep writes them (text), as the CSV's cells.
    for (std::size_t c = 0; c < sweep.columns.size() && c < r.labels.size(); ++c) j.set(sweep.columns[c], r.labels[c]);
    j.set("schedule", e.schedule);
    j.set("degree", e.degree);
    // Non-finite numbers are written null (io::Json), as the CSV leaves their cells empty.
    j.set("iteration_ms", e.iteration_ms);
    j.set("forward_ms", e.forward_ms);
    j.set("backward_ms", e.backward_ms);
    j.set("compute_ms", e.compute_ms);
    j.set("comm_ms", e.comm_ms);
    j.set("exposed_comm_ms", e.exposed_comm_ms);
    j.set("bubble_ms", e.bubble_ms);
    j.set("tasks", e.tasks);
    j.set("speedup_vs_none", r.speedup_vs_none);
    j.set("speedup_vs_tutel", r.speedup_vs_tutel);
    j.set("grad_partition_bytes", r.knobs.grad_partition_bytes);
    j.set("degree_forward", r.knobs.degree_forward);
    j.set("degree_backward", r.knobs.degree_backward);
    j.set("ar_chunk_bytes", r.knobs.ar_chunk_bytes);
    j.set("mapping", mapping_cell(r.knobs));
    out.push(std::move(j));
  }
  return out;
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

io::Json SweepSummary::to_json() const {
  io::Json summary = io::Json::array();
  for (const Entry& e : entries()) {
    io::Json entry = io::Json::object();
    entry.set("schedule", e.schedule);
    entry.set("points", static_cast<std::int64_t>(e.points));
    entry.set("mean_speedup_vs_none", e.mean_speedup_vs_none);  // null where no point had a baseline
    entry.set("geomean_speedup_vs_none", e.geomean_speedup_vs_none);
    entry.set("mean_speedup_vs_tutel", e.mean_speedup_vs_tutel);
    summary.push(std::move(entry));
  }
  return summary;
}

}  // namespace moeplan::report
