// moeplan validate-hw SCENARIO --backend host|cuda [--profile P | --calibrate P [--quick]] [--iterations N]
//                     [--warmup N] [--json] [--set k=v]...
// The loop as one command: calibrate this machine (or take a profile), simulate
// every schedule of the scenario's family, execute each on the backend, and set
// the simulator's ranking beside the measured one.

#include <algorithm>
#include <exception>
#include <memory>
#include <numeric>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/launch.hpp>
#include <moeplan/hostrt/mpi_session.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/validate.hpp>

#include "calibrate_support.hpp"
#include "cli_context.hpp"
#include "execute_support.hpp"
#include "scenario_support.hpp"

namespace moeplan::cli {
namespace {

struct ValidateHwOptions {
  std::string scenario;
  std::string backend;
  std::string profile;
  std::string calibrate;  // the profile file to measure and write first
  bool quick = false;
  int iterations = 3;
  int warmup = 1;
  bool json = false;
  std::vector<std::string> sets;
};

struct Row {
  std::string schedule;
  std::int64_t degree = 1;
  double simulated_ms = 0;
  double measured_ms = 0;
  double error_pct = 0;
  std::size_t simulated_rank = 0;  // 1 = fastest
  std::size_t measured_rank = 0;
};

// 1-based ranks by ascending time; ties keep the family's schedule order.
std::vector<std::size_t> ranks_of(const std::vector<double>& ms) {
  std::vector<std::size_t> order(ms.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ms[a] < ms[b]; });
  std::vector<std::size_t> rank(ms.size());
  for (std::size_t i = 0; i < order.size(); ++i) rank[order[i]] = i + 1;
  return rank;
}

void run_validate_hw(const ValidateHwOptions& o, CliContext& context) {
  if (!o.calibrate.empty() && !o.profile.empty())
    throw Error(ErrorKind::Input, "--calibrate and --profile: give one (--calibrate measures the profile this run "
                                  "uses)");
  if (o.quick && o.calibrate.empty()) throw Error(ErrorKind::Input, "--quick: only with --calibrate");
  std::vector<std::string> sets = o.sets;
  if (!o.profile.empty()) sets.push_back("profile_ref=" + o.profile);
  model::ScenarioSpec spec = io::load_scenario(o.scenario, parse_overrides(sets));
  check_executable(spec);
  const std::unique_ptr<exec::Backend> backend = exec::make_backend(o.backend);
  if (!o.calibrate.empty()) {
    // Measure, fit on process 0, and price with what process 0 fitted on every
    // process (the replay's processes must simulate the same graph).
    const CalibrationRequest request{o.backend, o.calibrate, "", spec.cluster.name, o.quick, "--calibrate"};
    check_calibration_request(request);
    // In one process calibrate measures no collective, and every bundled
    // executable scenario communicates: refuse before minutes of measuring.
    if (!launched_by_mpirun())
      throw Error(ErrorKind::Input, "--calibrate: not started by mpirun, so no collective could be measured; run "
                                    "under mpirun -n 2 (one process per rank), or calibrate first and pass --profile");
    // Process 0 fits the profile and may fail there (a busy machine's points
    // fit no line); the others then wait for its text in the broadcast, so
    // it sends an empty text first and each process exits 1, never hangs.
    std::optional<CalibratedProfile> measured;
    std::exception_ptr failure;
    try {
      measured = calibrate_profile(request, context.err);
    } catch (const Error&) {
      failure = std::current_exception();
    }
    const std::string text = hostrt::broadcast_from_rank0(measured ? measured->textproto : std::string());
    if (failure) std::rethrow_exception(failure);
    if (text.empty())
      throw Error(ErrorKind::Runtime, "--calibrate: MPI process 0 could not fit the profile (its error is above)");
    spec.profile = io::load_profile_text(o.calibrate, text);
    model::validate(spec);
    if (measured) {
      context.outputs.add(o.calibrate, measured->textproto);
      context.outputs.add(measured->points_path, measured->points_csv);
      context.err << "moeplan validate-hw: calibrated: " << o.calibrate << " and " << measured->points_path
                  << " (written when the run ends)\n";
    }
  }
  const plan::ScenarioRun run(std::move(spec));
  exec::ExecuteOptions options;
  options.iterations = o.iterations;
  options.warmup_iterations = o.warmup;
  options.progress = &context.err;
  std::vector<Row> rows;
  for (const std::string& schedule : runnable_schedules(run, "all", context.err)) {
    const ExecutedSchedule e = execute_schedule(run, schedule, std::nullopt, *backend, options);
    if (!e.measured.complete) continue;  // an MPI process other than 0
    rows.push_back({e.schedule, e.degree, e.comparison.simulated_iteration_ms, e.comparison.measured_iteration_ms,
                    e.comparison.iteration_error_pct, 0, 0});
  }
  if (rows.empty()) return;
  std::vector<double> simulated, measured;
  for (const Row& r : rows) {
    simulated.push_back(r.simulated_ms);
    measured.push_back(r.measured_ms);
  }
  const std::vector<std::size_t> sim_rank = ranks_of(simulated), real_rank = ranks_of(measured);
  std::size_t sim_best = 0, real_best = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].simulated_rank = sim_rank[i];
    rows[i].measured_rank = real_rank[i];
    if (sim_rank[i] == 1) sim_best = i;
    if (real_rank[i] == 1) real_best = i;
  }
  if (o.json) {
    io::Json j = io::Json::object();
    j.set("scenario", run.spec().name);
    j.set("backend", backend->name());
    j.set("profile", run.spec().profile ? run.spec().profile->name : std::string());
    j.set("calibrated_profile", o.calibrate.empty() ? io::Json() : io::Json(o.calibrate));
    io::Json::Array list;
    for (const Row& r : rows) {
      io::Json e = io::Json::object();
      e.set("schedule", r.schedule);
      e.set("degree", r.degree);
      e.set("simulated_iteration_ms", r.simulated_ms);
      e.set("measured_iteration_ms", r.measured_ms);
      e.set("iteration_error_pct", r.error_pct);
      e.set("simulated_rank", static_cast<std::int64_t>(r.simulated_rank));
      e.set("measured_rank", static_cast<std::int64_t>(r.measured_rank));
      list.push_back(std::move(e));
    }
    j.set("schedules", io::Json(std::move(list)));
    j.set("simulated_best", rows[sim_best].schedule);
    j.set("measured_best", rows[real_best].schedule);
    context.out << j.dump() << '\n';
    return;
  }
  context.out << fmt::format("{} on {} (profile {}):\n", run.spec().name, backend->name(),
                             run.spec().profile ? run.spec().profile->name : "");
  context.out << fmt::format("  {:<14} {:>4} {:>14} {:>14} {:>9} {:>9} {:>9}\n", "schedule", "d", "simulated ms",
                             "measured ms", "error", "sim rank", "meas rank");
  for (const Row& r : rows)
    context.out << fmt::format("  {:<14} {:>4} {:>14.3f} {:>14.3f} {:>+8.1f}% {:>9} {:>9}\n", r.schedule, r.degree,
                               r.simulated_ms, r.measured_ms, r.error_pct, r.simulated_rank, r.measured_rank);
  context.out << fmt::format("simulator ranked first: {}; measured fastest: {}{}\n", rows[sim_best].schedule,
                             rows[real_best].schedule, sim_best == real_best ? " (agree)" : " (disagree)");
}

}  // namespace

void add_validate_hw_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<ValidateHwOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate-hw", "Simulate and execute every schedule of a scenario; the simulated ranking beside the measured one");
  cmd->add_option("scenario", o->scenario, "Scenario (bundled name or path)")->required();
  cmd->add_option("--backend", o->backend, "host or cuda")->required();
  cmd->add_option("--profile", o->profile, "Cost profile that prices the simulation (default: the scenario's)");
  cmd->add_option("--calibrate", o->calibrate,
                  "Measure this machine first (as calibrate --backend B -o P) and price with that profile; P and its "
                  ".points.csv are written");
  cmd->add_flag("--quick", o->quick, "With --calibrate: fewer shapes, sizes and repetitions");
  add_number_option(cmd, "request.iterations", o->iterations, "Measured iterations per schedule (default 3)");
  add_number_option(cmd, "request.warmup", o->warmup, "Warm-up iterations per schedule (default 1)");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_option("--set", o->sets, "Override a scalar field: field.path=value (repeatable)");
  cmd->callback([o, &context] { run_validate_hw(*o, context); });
}

}  // namespace moeplan::cli
