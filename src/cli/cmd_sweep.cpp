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
#include <moeplan/plan/sweep.hpp>
#include <moeplan/output/sweep_csv.hpp>
#include <moeplan/output/sweep_report.hpp>

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

// One point's share of the output, as text, so that the rank that computed it
// can send it to rank 0 under mpirun: its CSV rows, then a 0x1e byte, then one
// "schedule<TAB>vs_none<TAB>vs_tutel" line per row (shortest round-trip
// numbers, so the means rank 0 forms are the one-process run's, bit for bit).
// A point that failed is 0x15, the error's kind (I, L or R) and its message.
std::string point_block(const std::vector<plan::SweepRow>& rows) {
  std::string stats;
  for (const plan::SweepRow& r : rows)
    stats += fmt::format("{}\t{}\t{}\n", r.evaluation.schedule, r.speedup_vs_none, r.speedup_vs_tutel);
  return output::sweep_csv_rows(rows) + '\x1e' + stats;
}

std::string error_block(const Error& e) {
  const char kind = e.kind() == ErrorKind::Input ? 'I' : e.kind() == ErrorKind::Limit ? 'L' : 'R';
  return std::string("\x15") + kind + format_error(e, flag_of);
}

void run_sweep_on(const SweepOptions& o, CliContext& context, const dist::Shard& shard);

void run_sweep(const SweepOptions& o, CliContext& context) {
  check_stdout_outputs(o.json, {{"-o", o.output}});
  const dist::Shard shard;  // every rank loads and checks the sweep, each computes its points
  try {
    run_sweep_on(o, context, shard);
  } catch (const Error& e) {
    // Every rank meets an error in the sweep file alike, and rank 0 reports a
    // point's failure whichever rank ran it: the other ranks exit quietly with
    // its code. Rank 0 writes its line before the shard ends (as capacity does).
    if (shard.rank() == 0) report_error(context.err, e);
    context.exit_code = exit_code_of(e);
  }
}

void run_sweep_on(const SweepOptions& o, CliContext& context, const dist::Shard& shard) {
  const io::LoadedSweep sweep = io::load_sweep(o.sweep, o.max_points);
  plan::check_sweep_schedules(sweep);
  const unsigned threads = thread_count(o.threads, context.err);
  const model::RunLimits limits = with_max_memory(model::ScenarioSpec{}, o.max_memory_gib).limits;
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
      blocks[i] = point_block(plan::evaluate_sweep_point(sweep, i, limits));
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
  std::string csv = output::sweep_csv_header(sweep);
  plan::SweepSummary totals;
  for (std::size_t i = 0; i < points; ++i) {
    const std::size_t split = blocks[i].find('\x1e');
    MOEPLAN_CHECK(split != std::string::npos, "a sweep point's block has its rows and its figures");
    csv.append(blocks[i], 0, split);
    std::stringstream lines(blocks[i].substr(split + 1));
    for (std::string line; std::getline(lines, line);) {
      const std::size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
      totals.add(line.substr(0, t1), std::strtod(line.c_str() + t1 + 1, nullptr),
                 std::strtod(line.c_str() + t2 + 1, nullptr));
    }
  }
  if (!o.output.empty()) context.outputs.add(o.output, csv);
  if (o.json) {
    context.out << output::sweep_summary_to_json(totals).dump() << '\n';
    return;
  }
  const std::string ran_on = shard.size() == 1 ? fmt::format("{} threads", started)
                                                : fmt::format("{} MPI ranks x {} threads", shard.size(), threads);
  context.out << output::sweep_summary_to_text(sweep.name, points, totals, ran_on, wall_s);
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
  add_number_option(cmd, "request.max_points", o->max_points,
                    fmt::format("Refuse a grid of more points than this (default {}; docs/reliability.md)",
                                io::kDefaultMaxSweepPoints));
  cmd->callback([o, &context] { run_sweep(*o, context); });
}

}  // namespace moeplan::cli
