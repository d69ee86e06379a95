// moeplan sweep SWEEP [-o F.csv] [--threads N] [--json]

#include <chrono>
#include <cmath>
#include <map>
#include <ostream>
#include <thread>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/parallel.hpp>
#include <moeplan/io/atomic_file.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/plan/sweep.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {
namespace {

struct SweepOptions {
  std::string sweep;
  std::string output;
  unsigned threads = 0;
  bool json = false;
};

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void run_sweep(const SweepOptions& o, CliContext& context) {
  const io::LoadedSweep sweep = io::load_sweep(o.sweep);
  const unsigned threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::vector<plan::Evaluation>> results(sweep.points.size());
  const auto start = std::chrono::steady_clock::now();
  parallel_for(sweep.points.size(), threads, [&](std::size_t i) {
    const io::SweepPoint& point = sweep.points[i];
    const model::ScenarioSpec spec = io::load_scenario(point.scenario, point.overrides);
    if (!spec.profile)
      throw Error(ErrorKind::Input, fmt::format("scenario '{}' names no cost profile", spec.name), "profile_ref");
    const cost::CostModel costs(*spec.profile);
    results[i] = plan::evaluate_point(spec, costs, sweep.schedules);
  });
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Rows in grid order whatever the thread count.
  std::string csv = "point,scenario";
  for (const std::string& column : sweep.columns) csv += "," + csv_cell(column);
  csv +=
      ",schedule,degree,iteration_ms,forward_ms,backward_ms,compute_ms,comm_ms,exposed_comm_ms,bubble_ms,tasks,"
      "speedup_vs_none,speedup_vs_tutel\n";
  struct Totals {
    std::size_t points = 0;
    double sum_none = 0, log_none = 0, sum_tutel = 0;
  };
  std::vector<std::string> order;
  std::map<std::string, Totals> totals;
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    const io::SweepPoint& point = sweep.points[i];
    double none_ms = 0, tutel_ms = 0;
    for (const plan::Evaluation& e : results[i]) {
      if (e.schedule == "none") none_ms = e.iteration_ms;
      if (e.schedule == "tutel") tutel_ms = e.iteration_ms;
    }
    std::map<std::string, std::string> labels(point.labels.begin(), point.labels.end());
    for (const plan::Evaluation& e : results[i]) {
      const double vs_none = none_ms > 0 ? none_ms / e.iteration_ms : NAN;
      const double vs_tutel = tutel_ms > 0 ? tutel_ms / e.iteration_ms : NAN;
      csv += fmt::format("{},{}", i, csv_cell(point.scenario));
      for (const std::string& column : sweep.columns) csv += "," + csv_cell(labels.count(column) ? labels[column] : "");
      csv += fmt::format(",{},{},{},{},{},{},{},{},{},{},{},{}\n", e.schedule, e.degree, e.iteration_ms, e.forward_ms,
                         e.backward_ms, e.compute_ms, e.comm_ms, e.exposed_comm_ms, e.bubble_ms, e.tasks, vs_none,
                         vs_tutel);
      if (!totals.count(e.schedule)) order.push_back(e.schedule);
      Totals& t = totals[e.schedule];
      ++t.points;
      t.sum_none += vs_none;
      t.log_none += std::log(vs_none);
      t.sum_tutel += vs_tutel;
    }
  }
  if (!o.output.empty()) io::write_file_atomic(o.output, csv);
  io::Json summary = io::Json::array();
  for (const std::string& name : order) {
    const Totals& t = totals[name];
    const double n = static_cast<double>(t.points);
    io::Json entry = io::Json::object();
    entry.set("schedule", name);
    entry.set("points", static_cast<std::int64_t>(t.points));
    entry.set("mean_speedup_vs_none", t.sum_none / n);
    entry.set("geomean_speedup_vs_none", std::exp(t.log_none / n));
    entry.set("mean_speedup_vs_tutel", t.sum_tutel / n);
    summary.push(std::move(entry));
  }
  if (o.json) {
    context.out << summary.dump() << '\n';
    return;
  }
  context.out << fmt::format("sweep {}: {} points x {} schedules on {} threads in {:.2f} s\n", sweep.name,
                             sweep.points.size(), order.size(), threads, wall_s);
  for (const std::string& name : order) {
    const Totals& t = totals[name];
    const double n = static_cast<double>(t.points);
    context.out << fmt::format("  {:<14} mean speed-up {:.3f}x vs none (geomean {:.3f}x), {:.3f}x vs tutel\n", name,
                               t.sum_none / n, std::exp(t.log_none / n), t.sum_tutel / n);
  }
  if (!o.output.empty()) context.out << "  wrote " << o.output << '\n';
}

}  // namespace

void add_sweep_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "Run a grid of scenarios x schedules");
  cmd->add_option("sweep", o->sweep, "Sweep (bundled name or path)")->required();
  cmd->add_option("-o,--output", o->output, "CSV: one row per (point, schedule)");
  cmd->add_option("--threads", o->threads, "Worker threads (default: all cores); results do not depend on it");
  cmd->add_flag("--json", o->json, "Print the per-schedule summary as JSON");
  cmd->callback([o, &context] { run_sweep(*o, context); });
}

}  // namespace moeplan::cli
