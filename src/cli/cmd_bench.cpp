// moeplan bench engine|planner|folding|executor|capacity|published [--runs TABLE] [--json]

#include <algorithm>
#include <chrono>
#include <ostream>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include <moeplan/core/error.hpp>
#include <moeplan/core/median.hpp>
#include <moeplan/exec/backend.hpp>
#include <moeplan/exec/compare.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/published_runs.hpp>
#include <moeplan/perf/benchmarks.hpp>
#include <moeplan/perf/published_bench.hpp>
#include <moeplan/plan/scenario_run.hpp>

#include "cli_context.hpp"
#include "execute_support.hpp"

namespace moeplan::cli {
namespace {

struct BenchOptions {
  std::string what;
  std::string runs;  ///< bench published: the table (default: the bundled one)
  bool json = false;
};

// A benchmark's report as --json asks.
void print(const perf::BenchReport& report, const BenchOptions& o, CliContext& context) {
  if (o.json)
    context.out << report.json.dump() << '\n';
  else
    context.out << report.text;
}

// The host executor against the simulator: every schedule of the bundled
// small host scenarios, 1 warm-up and 3 measured iterations each; the median
// over schedules of |iteration_error_pct| (target: at most 10%). Under mpirun
// -n 2 each rank runs in its own process, as the host-2 profile was measured;
// in one process both ranks' threads share it (said in the output).
constexpr double kExecutorTargetPct = 10;

void run_executor_bench(const BenchOptions& o, CliContext& context) {
  const std::unique_ptr<exec::Backend> backend = exec::make_backend("host");
  exec::ExecuteOptions options;
  options.warmup_iterations = 1;
  options.iterations = 3;
  options.progress = &context.err;
  io::Json::Array rows;
  std::vector<double> errors;
  std::string text;
  for (const char* name : {"host-flowmoe-small", "host-foldmoe-small"}) {
    const plan::ScenarioRun run(io::load_scenario(name));
    for (const std::string& schedule : run.runnable_schedules("all")) {
      const ExecutedSchedule e = execute_schedule(run, schedule, std::nullopt, *backend, options);
      if (!e.measured.complete) continue;  // MPI processes other than 0
      const exec::Comparison& c = e.comparison;
      errors.push_back(std::abs(c.iteration_error_pct));
      io::Json row = io::Json::object();
      row.set("scenario", name);
      row.set("schedule", e.schedule);
      row.set("simulated_iteration_ms", c.simulated_iteration_ms);
      row.set("measured_iteration_ms", c.measured_iteration_ms);
      row.set("iteration_error_pct", c.iteration_error_pct);
      io::Json ops = io::Json::object();
      std::string op_text;
      for (const exec::OpComparison& op : c.ops) {
        ops.set(model::to_string(op.op), op.error_pct);
        op_text += fmt::format(" {} {:+.1f}%", model::to_string(op.op), op.error_pct);
      }
      row.set("op_error_pct", ops);
      rows.push_back(std::move(row));
      text += fmt::format("  {:<20} {:<14} simulated {:9.3f} ms  measured {:9.3f} ms  error {:+6.1f}%  per op:{}\n",
                          name, e.schedule, c.simulated_iteration_ms, c.measured_iteration_ms, c.iteration_error_pct,
                          op_text);
    }
  }
  if (errors.empty()) return;
  const std::size_t n = errors.size();
  const double median = moeplan::median(errors);
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const std::int64_t processes = size != nullptr ? std::atoll(size) : 1;
  if (o.json) {
    io::Json doc = io::Json::object();
    doc.set("backend", "host");
    doc.set("processes", processes);
    doc.set("schedules", io::Json(std::move(rows)));
    doc.set("median_abs_iteration_error_pct", median);
    doc.set("target_pct", kExecutorTargetPct);
    doc.set("meets_target", median <= kExecutorTargetPct);
    context.out << doc.dump() << '\n';
    return;
  }
  context.out << fmt::format("executor (host, {} process{}{}):\n{}", processes, processes == 1 ? "" : "es",
                             processes == 1 ? ", every rank's threads in this one: run under mpirun -n 2" : "", text);
  context.out << fmt::format("median |iteration error| over {} schedules: {:.1f}% (target <= {:.0f}%{})\n", n, median,
                             kExecutorTargetPct, median <= kExecutorTargetPct ? ", met" : ", NOT met");
}

}  // namespace

void add_bench_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd =
      app.add_subcommand("bench", "Built-in benchmarks: engine (1M-task DAG), planner, folding, executor, capacity, published (accuracy on measured runs)");
  cmd->add_option("what", o->what, "engine, planner, folding, executor, capacity or published")
      ->required()
      ->check(CLI::IsMember({"engine", "planner", "folding", "executor", "capacity", "published"}));
  cmd->add_option("--runs", o->runs,
                  "bench published: the table of measured runs (default: the bundled tests/data/published-runs.tsv)");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o, &context] {
    if (!o->runs.empty() && o->what != "published")
      throw Error(ErrorKind::Input, fmt::format("only bench published reads a table, not bench {}", o->what), "--runs");
    if (o->what == "published")
      print(perf::bench_published(o->runs.empty() ? io::bundled_published_runs() : o->runs), *o, context);
    else if (o->what == "planner")
      print(perf::bench_planner(), *o, context);
    else if (o->what == "folding")
      print(perf::bench_folding(), *o, context);
    else if (o->what == "executor")
      run_executor_bench(*o, context);
    else if (o->what == "capacity")
      print(perf::bench_capacity(), *o, context);
    else
      print(perf::bench_engine(), *o, context);
  });
}

}  // namespace moeplan::cli
