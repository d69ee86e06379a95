// moeplan sweep SWEEP [-o F.csv] [--threads N] [--json]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <cstdlib>
#include <exception>
#include <ostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/parallel.hpp>
#include <moeplan/dist/shard.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/families.hpp>
#include <moeplan/plan/sweep.hpp>

#include "cli_context.hpp"
#include "scenario_support.hpp"

namespace moeplan::cli {
namespace {

struct SweepOptions {
  std::string sweep;
  std::string output;
  unsigned threads = 0;
  bool json = false;
  std::size_t max_points = io::kDefaultMaxSweepPoints;
  double max_memory_gib = 8;  // set by add_max_memory_option
  bool quiet = false;
};

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A number cell; empty where the number is not finite (no baseline row, a
// zero-length iteration), so that no reader meets "nan" or "inf".
std::string number_cell(double value) { return std::isfinite(value) ? fmt::format("{}", value) : std::string(); }

// Mean of the finite values seen; NaN (JSON null, "n/a") when there were none.
struct Mean {
  double sum = 0;
  std::size_t count = 0;
  void add(double value) {
    if (!std::isfinite(value)) return;
    sum += value;
    ++count;
  }
  double value() const { return count > 0 ? sum / static_cast<double>(count) : NAN; }
};

std::string ratio_text(double value) { return std::isfinite(value) ? fmt::format("{:.3f}x", value) : "n/a"; }

// "tp1-cp4-pp8-vpp1-ep8-etp1-mb1", or empty.
std::string mapping_cell(const plan::PlannedKnobs& k) {
  if (!k.parallelism) return "";
  const model::ParallelSpec& p = *k.parallelism;
  return fmt::format("tp{}-cp{}-pp{}-vpp{}-ep{}-etp{}-mb{}", p.tp, p.cp, p.pp, p.vpp, p.ep, p.etp, k.micro_batch_size);
}

// Every schedule the sweep names must belong to every base scenario's family:
// a sweep never runs another family's schedules on a scenario.
void check_schedules(const io::LoadedSweep& sweep) {
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

// One point's share of the output, as text, so that the rank that computed it
// can send it to rank 0 under mpirun: its CSV rows, then a 0x1e byte, then one
// "schedule<TAB>vs_none<TAB>vs_tutel" line per row (shortest round-trip
// numbers, so the means rank 0 forms are the one-process run's, bit for bit).
// A point that failed is 0x15, the error's kind (I, L or R) and its message.
std::string point_block(const io::LoadedSweep& sweep, std::size_t i, const std::vector<plan::PointResult>& results) {
  const io::SweepPoint point = sweep.point(i);
  double none_ms = NAN, tutel_ms = NAN;
  for (const plan::PointResult& r : results) {
    if (r.evaluation.schedule == "none") none_ms = r.evaluation.iteration_ms;
    if (r.evaluation.schedule == "tutel") tutel_ms = r.evaluation.iteration_ms;
  }
  std::map<std::string, std::string> labels(point.labels.begin(), point.labels.end());
  std::string rows, stats;
  for (const plan::PointResult& r : results) {
    const plan::Evaluation& e = r.evaluation;
    // NaN without a baseline row or with a zero-length iteration: an empty cell, left out of the means.
    const double vs_none = none_ms / e.iteration_ms;
    const double vs_tutel = tutel_ms / e.iteration_ms;
    rows += fmt::format("{},{}", i, csv_cell(point.scenario));
    for (const std::string& column : sweep.columns) rows += "," + csv_cell(labels.count(column) ? labels[column] : "");
    rows += fmt::format(",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_cell(e.schedule), e.degree,
                        number_cell(e.iteration_ms), number_cell(e.forward_ms), number_cell(e.backward_ms),
                        number_cell(e.compute_ms), number_cell(e.comm_ms), number_cell(e.exposed_comm_ms),
                        number_cell(e.bubble_ms), e.tasks, number_cell(vs_none), number_cell(vs_tutel),
                        number_cell(r.knobs.grad_partition_bytes), r.knobs.degree_forward, r.knobs.degree_backward,
                        r.knobs.ar_chunk_bytes, mapping_cell(r.knobs));
    stats += fmt::format("{}\t{}\t{}\n", e.schedule, vs_none, vs_tutel);
  }
  return rows + '\x1e' + stats;
}

std::string error_block(const Error& e) {
  const char kind = e.kind() == ErrorKind::Input ? 'I' : e.kind() == ErrorKind::Limit ? 'L' : 'R';
  return std::string("\x15") + kind + format_error(e);
}

void run_sweep_on(const SweepOptions& o, CliContext& context, const dist::Shard& shard);

void run_sweep(const SweepOptions& o, CliContext& context) {
  check_stdout_outputs(o.json, {{"-o", o.output}});
  const dist::Shard shard;  // every rank loads and checks the sweep, each computes its points
  try {
    run_sweep_on(o, context, shard);
  } catch (const Error& e) {
    // Every rank meets an error in the sweep file alike, and rank 0 reports a
    // point's failure whichever rank ran it: the other ranks exit quietly with its code.
    if (shard.rank() == 0) throw;
    context.exit_code = e.kind() == ErrorKind::Runtime ? 1 : 2;
  }
}

void run_sweep_on(const SweepOptions& o, CliContext& context, const dist::Shard& shard) {
  const io::LoadedSweep sweep = io::load_sweep(o.sweep, o.max_points);
  check_schedules(sweep);
  const unsigned threads = thread_count(o.threads, context.err);
  const std::size_t points = sweep.size();
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < points; ++i)
    if (shard.mine(i)) mine.push_back(i);
  std::vector<std::string> blocks(points);
  std::vector<std::exception_ptr> failures(points);
  // Rank 0 draws its own share (a terminal shows one bar, not one per rank).
  std::unique_ptr<ProgressBar> bar = progress_bar("sweep", o.quiet || shard.rank() != 0, context.err);
  if (bar) bar->add_total(mine.size());
  const auto start = std::chrono::steady_clock::now();
  const unsigned started = parallel_for(mine.size(), threads, [&](std::size_t k) {
    const std::size_t i = mine[k];
    try {
      const io::SweepPoint point = sweep.point(i);
      const model::ScenarioSpec spec = with_max_memory(io::load_sweep_point(point), o.max_memory_gib);
      refuse_noise(spec, "sweep");
      if (!spec.profile)
        throw Error(ErrorKind::Input, fmt::format("scenario {} names no cost profile", quoted_for_error(spec.name)),
                    "profile_ref");
      const cost::CostModel costs(*spec.profile);
      // The points are the parallel work.
      blocks[i] = point_block(sweep, i, plan::evaluate_point(spec, costs, sweep.schedules, 1));
      if (bar) bar->advance();
    } catch (const Error& e) {
      failures[i] = std::current_exception();
      blocks[i] = error_block(e);
    }
  });
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bar.reset();
  blocks = shard.gather(std::move(blocks));
  if (shard.rank() != 0) return;  // rank 0 writes and prints
  if (shard.size() == 1) note_threads_started(threads, started, mine.size(), context.err);
  // The first failed point in grid order fails the sweep, whichever rank ran it.
  for (std::size_t i = 0; i < points; ++i) {
    if (failures[i]) std::rethrow_exception(failures[i]);
    if (!blocks[i].empty() && blocks[i][0] == '\x15') {
      const char kind = blocks[i][1];
      throw Error(kind == 'I' ? ErrorKind::Input : kind == 'L' ? ErrorKind::Limit : ErrorKind::Runtime,
                  blocks[i].substr(2));
    }
  }
  // Rows in grid order whatever the thread or rank count.
  std::string csv = "point,scenario";
  for (const std::string& column : sweep.columns) csv += "," + csv_cell(column);
  csv +=
      ",schedule,degree,iteration_ms,forward_ms,backward_ms,compute_ms,comm_ms,exposed_comm_ms,bubble_ms,tasks,"
      "speedup_vs_none,speedup_vs_tutel,grad_partition_bytes,degree_forward,degree_backward,ar_chunk_bytes,mapping\n";
  struct Totals {
    std::size_t points = 0;
    Mean vs_none, log_vs_none, vs_tutel;
  };
  std::vector<std::string> order;
  std::map<std::string, Totals> totals;
  for (std::size_t i = 0; i < points; ++i) {
    const std::size_t split = blocks[i].find('\x1e');
    MOEPLAN_CHECK(split != std::string::npos, "a sweep point's block has its rows and its figures");
    csv.append(blocks[i], 0, split);
    std::stringstream lines(blocks[i].substr(split + 1));
    for (std::string line; std::getline(lines, line);) {
      const std::size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
      const std::string schedule = line.substr(0, t1);
      const double vs_none = std::strtod(line.c_str() + t1 + 1, nullptr);
      const double vs_tutel = std::strtod(line.c_str() + t2 + 1, nullptr);
      if (!totals.count(schedule)) order.push_back(schedule);
      Totals& t = totals[schedule];
      ++t.points;
      t.vs_none.add(vs_none);
      t.log_vs_none.add(std::log(vs_none));
      t.vs_tutel.add(vs_tutel);
    }
  }
  if (!o.output.empty()) context.outputs.add(o.output, csv);
  io::Json summary = io::Json::array();
  for (const std::string& name : order) {
    const Totals& t = totals[name];
    io::Json entry = io::Json::object();
    entry.set("schedule", name);
    entry.set("points", static_cast<std::int64_t>(t.points));
    entry.set("mean_speedup_vs_none", t.vs_none.value());  // null where no point had a baseline
    entry.set("geomean_speedup_vs_none", std::exp(t.log_vs_none.value()));
    entry.set("mean_speedup_vs_tutel", t.vs_tutel.value());
    summary.push(std::move(entry));
  }
  if (o.json) {
    context.out << summary.dump() << '\n';
    return;
  }
  context.out << fmt::format("sweep {}: {} points x {} schedules on {} in {:.2f} s\n", sweep.name, points,
                             order.size(),
                             shard.size() == 1 ? fmt::format("{} threads", started)
                                               : fmt::format("{} MPI ranks x {} threads", shard.size(), threads),
                             wall_s);
  for (const std::string& name : order) {
    const Totals& t = totals[name];
    context.out << fmt::format("  {:<14} mean speed-up {} vs none (geomean {}), {} vs tutel\n", name,
                               ratio_text(t.vs_none.value()), ratio_text(std::exp(t.log_vs_none.value())),
                               ratio_text(t.vs_tutel.value()));
  }
  if (!o.output.empty()) context.out << "  wrote " << o.output << '\n';
}

}  // namespace

void add_sweep_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "Run a grid of scenarios x schedules");
  cmd->add_option("sweep", o->sweep, "Sweep (bundled name or path)")->required();
  cmd->add_option("-o,--output", o->output, "CSV: one row per (point, schedule); - for stdout");
  add_threads_option(cmd, o->threads);
  add_quiet_option(cmd, o->quiet);
  add_max_memory_option(cmd, o->max_memory_gib);
  cmd->add_flag("--json", o->json, "Print the per-schedule summary as JSON");
  cmd->add_option("--max-points", o->max_points,
                  fmt::format("Refuse a grid of more points than this (default {}; docs/reliability.md)",
                              io::kDefaultMaxSweepPoints))
      ->check(positive());
  cmd->callback([o, &context] { run_sweep(*o, context); });
}

}  // namespace moeplan::cli
