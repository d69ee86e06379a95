// `moeplan bench published` (docs/validation.md): the published runs simulated
// and compared with their measurements.

#include <moeplan/perf/published_bench.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <moeplan/core/median.hpp>
#include <moeplan/core/units.hpp>
#include <moeplan/cost/memory.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/plan/simulate.hpp>

namespace moeplan::perf {
namespace {

std::string mapping_of(const io::PublishedRun& r) {
  return fmt::format("tp{} pp{} vpp{} cp{} ep{} etp{} dp{} mbs{}", r.tp, r.pp, r.vpp, r.cp, r.ep, r.etp, r.dp,
                     r.micro_batch);
}

// The model as the row expresses it: its file and its `model.` overrides (a
// truncated model is another model, whatever the source calls it: SimuMax's
// Llama3-70B at 8 layers and at 12).
std::string model_as_run(const io::PublishedRun& r) {
  std::string out = r.model_ref;
  for (const io::Override& o : r.overrides)
    if (o.field.rfind("model.", 0) == 0) out += fmt::format(";{}={}", o.field, o.value);
  return out;
}

// Rows whose iteration times are comparable: one model on one GPU type and
// count, one sequence and global batch (so the same work per iteration).
auto comparable_key(const io::PublishedRun& r) {
  return std::make_tuple(r.model, model_as_run(r), r.cluster_ref, r.gpus, r.seq, r.global_batch);
}

PublishedPrediction predict_one(const io::PublishedRun& r, const std::string& table_path) {
  PublishedPrediction p;
  p.measured_iteration_s = r.measured_iteration_s();
  try {
    const model::ScenarioSpec spec = io::load_scenario_text(table_path, r.scenario_text(), r.overrides);
    if (spec.cluster.gpus_per_node != r.gpus_per_node)
      throw Error(ErrorKind::Input,
                  fmt::format("the run has {} GPUs per node, cluster {} has {}", r.gpus_per_node, spec.cluster.name,
                              spec.cluster.gpus_per_node),
                  "gpus_per_node");
    if (spec.model.dtype_bytes != 2)
      throw Error(ErrorKind::Input,
                  fmt::format("the run is bf16, model {} has {}-byte elements", spec.model.name, spec.model.dtype_bytes),
                  "precision");
    const plan::ScenarioRun run(spec);
    const plan::Simulation sim = plan::simulate(run, plan::SimulateRequest{});
    if (!sim.mapping)
      throw Error(ErrorKind::Input,
                  fmt::format("family {} simulates named schedules of one layer stack, not a whole training run",
                              spec.schedule.family),
                  "family");
    p.predicted_iteration_s = sim.mapping->iteration_ms / kMsPerSecond;
    p.predicted_memory_gib = sim.mapping->memory_bytes_per_gpu / kGiB;
    p.predicted_fits = sim.mapping->fits;
    p.predicted_tight = cost::tight_in_memory(spec.cluster.gpu, sim.mapping->memory_bytes_per_gpu);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Input) throw;
    throw Error(ErrorKind::Input, fmt::format("run {}: {}", r.id, e.reason()), e.field(),
                SourceLocation{table_path, r.line, 0});
  }
  p.error_pct = 100.0 * (p.predicted_iteration_s - p.measured_iteration_s) / p.measured_iteration_s;
  if (r.peak_alloc_gib) p.memory_error_pct = 100.0 * (p.predicted_memory_gib - *r.peak_alloc_gib) / *r.peak_alloc_gib;
  return p;
}

}  // namespace

std::vector<PublishedPrediction> predict_published(const std::vector<io::PublishedRun>& runs,
                                                   const std::string& table_path) {
  std::vector<PublishedPrediction> out;
  out.reserve(runs.size());
  for (const io::PublishedRun& r : runs) out.push_back(predict_one(r, table_path));
  return out;
}

PublishedSummary summarize_published(const std::vector<io::PublishedRun>& runs,
                                     const std::vector<PublishedPrediction>& predictions) {
  MOEPLAN_CHECK(runs.size() == predictions.size(), "one prediction per run");
  PublishedSummary s;
  s.rows = runs.size();
  std::vector<double> abs_errors, memory_errors;
  double signed_sum = 0;
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    const PublishedPrediction& p = predictions[i];
    if (p.predicted_fits) ++s.rows_predicted_to_fit;
    if (p.predicted_tight) s.tight_rows.push_back(runs[i].id);
    abs_errors.push_back(std::abs(p.error_pct));
    signed_sum += p.error_pct;
    if (p.memory_error_pct) memory_errors.push_back(std::abs(*p.memory_error_pct));
  }
  s.median_abs_error_pct = abs_errors.empty() ? 0 : median(abs_errors);
  s.mean_signed_error_pct = runs.empty() ? 0 : signed_sum / static_cast<double>(runs.size());
  s.memory_rows = memory_errors.size();
  s.median_abs_memory_error_pct = memory_errors.empty() ? 0 : median(memory_errors);
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t j = i + 1; j < runs.size(); ++j) {
      if (comparable_key(runs[i]) != comparable_key(runs[j]) || mapping_of(runs[i]) == mapping_of(runs[j])) continue;
      const double measured = predictions[i].measured_iteration_s - predictions[j].measured_iteration_s;
      if (measured == 0) continue;  // a measured tie orders nothing
      ++s.pairs;
      const double predicted = predictions[i].predicted_iteration_s - predictions[j].predicted_iteration_s;
      if ((measured < 0) == (predicted < 0) && predicted != 0) ++s.pairs_in_order;
    }
  // Groups, in the table's order of their first row: which row would a planner
  // restricted to the group's mappings pick, and did it run fastest?
  std::vector<bool> grouped(runs.size(), false);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (grouped[i]) continue;
    std::vector<std::size_t> group;
    for (std::size_t j = i; j < runs.size(); ++j)
      if (!grouped[j] && comparable_key(runs[j]) == comparable_key(runs[i])) {
        grouped[j] = true;
        group.push_back(j);
      }
    const bool several_mappings = std::any_of(group.begin(), group.end(), [&](std::size_t j) {
      return mapping_of(runs[j]) != mapping_of(runs[i]);
    });
    if (!several_mappings) continue;
    ++s.groups;
    std::size_t fastest = group.front(), picked = group.front();
    for (const std::size_t j : group) {
      if (predictions[j].measured_iteration_s < predictions[fastest].measured_iteration_s) fastest = j;
      if (predictions[j].predicted_iteration_s < predictions[picked].predicted_iteration_s) picked = j;
    }
    // A hit: the mapping predicted fastest is the one measured fastest (rows of
    // one mapping, measured in other containers, share their prediction), or
    // it ran as fast.
    if (mapping_of(runs[picked]) == mapping_of(runs[fastest]) ||
        predictions[picked].measured_iteration_s == predictions[fastest].measured_iteration_s) {
      ++s.groups_fastest_predicted;
      continue;
    }
    s.group_misses.push_back({runs[fastest].id, runs[picked].id,
                              100.0 * (predictions[fastest].predicted_iteration_s -
                                       predictions[picked].predicted_iteration_s) /
                                  predictions[fastest].predicted_iteration_s});
  }
  return s;
}

BenchReport bench_published(const std::string& table_path) {
  const std::vector<io::PublishedRun> runs = io::read_published_runs(table_path);
  const std::vector<PublishedPrediction> predictions = predict_published(runs, table_path);
  const PublishedSummary s = summarize_published(runs, predictions);
  BenchReport report;
  io::Json::Array rows;
  std::string text = fmt::format("published runs ({}):\n", table_path);
  text += fmt::format("  {:<8} {:<28} {:<10} {:>5}  {:<34} {:>10} {:>10} {:>8} {:>9} {:>9}\n", "id", "model", "gpu",
                      "gpus", "mapping", "measured s", "predicted", "error", "mem GiB", "peak GiB");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const io::PublishedRun& r = runs[i];
    const PublishedPrediction& p = predictions[i];
    io::Json row = io::Json::object();
    row.set("id", r.id);
    row.set("model", r.model);
    row.set("model_as_run", model_as_run(r));
    row.set("cluster", r.cluster_ref);
    row.set("gpus", r.gpus);
    row.set("mapping", mapping_of(r));
    row.set("seq", r.seq);
    row.set("global_batch", r.global_batch);
    row.set("metric", r.metric);
    row.set("measured_value", r.value);
    row.set("measured_iteration_s", p.measured_iteration_s);
    row.set("predicted_iteration_s", p.predicted_iteration_s);
    row.set("error_pct", p.error_pct);
    row.set("predicted_memory_gib", p.predicted_memory_gib);
    row.set("predicted_fits", p.predicted_fits);
    row.set("predicted_tight", p.predicted_tight);
    if (r.peak_alloc_gib) {
      row.set("measured_peak_alloc_gib", *r.peak_alloc_gib);
      row.set("memory_error_pct", *p.memory_error_pct);
    }
    row.set("source", r.source);
    rows.push_back(std::move(row));
    text += fmt::format("  {:<8} {:<28} {:<10} {:>5}  {:<34} {:>10.4f} {:>10.4f} {:>+7.1f}% {:>9.2f} {:>9}\n", r.id,
                        r.model.substr(0, 28), r.cluster_ref.substr(0, 10), r.gpus, mapping_of(r),
                        p.measured_iteration_s, p.predicted_iteration_s, p.error_pct, p.predicted_memory_gib,
                        r.peak_alloc_gib ? fmt::format("{:.2f}", *r.peak_alloc_gib) : std::string("-"));
  }
  io::Json summary = io::Json::object();
  summary.set("rows", static_cast<std::int64_t>(s.rows));
  summary.set("median_abs_error_pct", s.median_abs_error_pct);
  summary.set("mean_signed_error_pct", s.mean_signed_error_pct);
  summary.set("pairs", static_cast<std::int64_t>(s.pairs));
  summary.set("pairs_in_measured_order", static_cast<std::int64_t>(s.pairs_in_order));
  if (s.pairs > 0)
    summary.set("pair_ranking_share", static_cast<double>(s.pairs_in_order) / static_cast<double>(s.pairs));
  summary.set("groups", static_cast<std::int64_t>(s.groups));
  summary.set("groups_fastest_predicted", static_cast<std::int64_t>(s.groups_fastest_predicted));
  io::Json::Array misses;
  for (const PublishedSummary::GroupMiss& m : s.group_misses) {
    io::Json j = io::Json::object();
    j.set("measured_fastest", m.measured_fastest);
    j.set("predicted_fastest", m.predicted_fastest);
    j.set("predicted_margin_pct", m.predicted_margin_pct);
    misses.push_back(std::move(j));
  }
  summary.set("group_misses", io::Json(std::move(misses)));
  summary.set("memory_rows", static_cast<std::int64_t>(s.memory_rows));
  summary.set("median_abs_memory_error_pct", s.median_abs_memory_error_pct);
  summary.set("rows_predicted_to_fit", static_cast<std::int64_t>(s.rows_predicted_to_fit));
  io::Json::Array tight;
  for (const std::string& id : s.tight_rows) tight.push_back(io::Json(id));
  summary.set("tight_rows", io::Json(std::move(tight)));
  report.json = io::Json::object();
  report.json.set("table", table_path);
  report.json.set("runs", io::Json(std::move(rows)));
  report.json.set("summary", summary);
  text += fmt::format("{} runs: median |error| {:.1f}%, mean signed error {:+.1f}%; ", s.rows, s.median_abs_error_pct,
                      s.mean_signed_error_pct);
  text += s.pairs > 0 ? fmt::format("{} of {} pairs ranked in the measured order ({:.0f}%)", s.pairs_in_order, s.pairs,
                                    100.0 * static_cast<double>(s.pairs_in_order) / static_cast<double>(s.pairs))
                      : std::string("no pairs to rank");
  text += fmt::format("; memory: median |error| {:.1f}% over {} runs with a published peak\n",
                      s.median_abs_memory_error_pct, s.memory_rows);
  text += fmt::format("{} of {} runs predicted to fit in their GPU's memory", s.rows_predicted_to_fit, s.rows);
  text += s.tight_rows.empty() ? std::string("\n")
                               : fmt::format(" ({} by less than the memory model's error: {})\n",
                                             s.tight_rows.size(), fmt::join(s.tight_rows, ", "));
  text += fmt::format("{} of {} groups (one model, GPUs, sequence and batch; several mappings): the mapping "
                      "predicted fastest ran fastest\n",
                      s.groups_fastest_predicted, s.groups);
  for (const PublishedSummary::GroupMiss& m : s.group_misses)
    text += fmt::format("  {} ran fastest; the model picks {}, predicting it {:.1f}% faster\n", m.measured_fastest,
                        m.predicted_fastest, m.predicted_margin_pct);
  report.text = std::move(text);
  return report;
}

}  // namespace moeplan::perf
