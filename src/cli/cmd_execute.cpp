// moeplan execute SCENARIO --backend host|cuda [--profile P] [--schedule S|all] [--degree N]
//                 [--iterations N] [--warmup N] [--compare] [--trace F.json] [--json] [-o F.json] [--set k=v]...

#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/exec/backend.hpp>
#include <moeplan/exec/compare.hpp>
#include <moeplan/exec/replay_plan.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/plan_reader.hpp>
#include <moeplan/output/timeline_writer.hpp>
#include <moeplan/plan/scenario_run.hpp>

#include "cli_context.hpp"
#include "execute_support.hpp"
#include "scenario_support.hpp"

namespace moeplan::cli {
namespace {

struct ExecuteCliOptions {
  std::string scenario;
  std::string backend;
  std::string profile;
  std::string schedule;
  std::optional<std::int64_t> degree;
  int iterations = 3;
  int warmup = 1;
  bool compare = false;
  std::string trace;
  bool json = false;
  std::string output;
  std::vector<std::string> sets;
};

// With several schedules, "out.json" becomes "out.<schedule>.json" (as simulate names them).
std::string per_schedule(const std::string& path, const std::string& schedule, bool several) {
  if (!several) return path;
  const std::size_t dot = path.rfind('.');
  const std::size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + schedule;
  return path.substr(0, dot) + "." + schedule + path.substr(dot);
}

io::Json op_to_json(const exec::OpComparison& o) {
  io::Json j = io::Json::object();
  j.set("op", model::to_string(o.op));
  j.set("tasks", static_cast<std::int64_t>(o.tasks));
  j.set("simulated_median_ms", o.simulated_median_ms);
  j.set("simulated_p95_ms", o.simulated_p95_ms);
  j.set("measured_median_ms", o.measured_median_ms);
  j.set("measured_p95_ms", o.measured_p95_ms);
  j.set("error_pct", o.error_pct);
  return j;
}

io::Json result_to_json(const std::string& scenario, const ExecutedSchedule& r, bool compare) {
  io::Json j = io::Json::object();
  j.set("scenario", scenario);
  j.set("schedule", r.schedule);
  j.set("degree", r.degree);
  j.set("backend", r.backend);
  j.set("tasks", static_cast<std::int64_t>(r.tasks));
  io::Json::Array iterations;
  for (double ms : r.measured.iteration_ms) iterations.emplace_back(ms);
  j.set("measured_iterations_ms", io::Json(std::move(iterations)));
  io::Json::Array proxied;
  for (std::size_t t = 0; t < r.measured.proxied.size(); ++t)
    if (r.measured.proxied[t]) proxied.emplace_back(static_cast<std::int64_t>(t));
  j.set("proxied_tasks", io::Json(std::move(proxied)));
  if (!r.measured.proxy_note.empty()) j.set("proxy", r.measured.proxy_note);
  j.set("measured_iteration_ms", r.comparison.measured_iteration_ms);
  if (!compare) return j;
  const exec::Comparison& c = r.comparison;
  j.set("simulated_iteration_ms", c.simulated_iteration_ms);
  j.set("iteration_error_pct", c.iteration_error_pct);
  j.set("simulated_exposed_comm_ms", c.simulated_exposed_comm_ms);
  j.set("measured_exposed_comm_ms", c.measured_exposed_comm_ms);
  io::Json::Array ops;
  for (const exec::OpComparison& o : c.ops) ops.push_back(op_to_json(o));
  j.set("ops", io::Json(std::move(ops)));
  return j;
}

void print_text(const std::string& scenario, const ExecutedSchedule& r, bool compare, std::ostream& out) {
  const exec::Comparison& c = r.comparison;
  const auto [low, high] = std::minmax_element(r.measured.iteration_ms.begin(), r.measured.iteration_ms.end());
  if (!compare) {
    out << fmt::format("{} {} d={}: measured iteration {:.3f} ms (median of {}, range {:.3f}..{:.3f}) on {}\n",
                       scenario, r.schedule, r.degree, c.measured_iteration_ms, r.measured.iteration_ms.size(), *low,
                       *high, r.backend);
    return;
  }
  out << fmt::format(
      "{} {} d={} on {}: iteration simulated {:.3f} ms, measured {:.3f} ms (median of {}, range {:.3f}..{:.3f}), "
      "error {:+.1f}%\n  exposed communication simulated {:.3f} ms, measured {:.3f} ms\n",
      scenario, r.schedule, r.degree, r.backend, c.simulated_iteration_ms, c.measured_iteration_ms,
      r.measured.iteration_ms.size(), *low, *high, c.iteration_error_pct, c.simulated_exposed_comm_ms,
      c.measured_exposed_comm_ms);
  out << fmt::format("  {:<14} {:>6} {:>12} {:>12} {:>12} {:>12} {:>8}\n", "op", "tasks", "sim median", "sim p95",
                     "meas median", "meas p95", "error");
  for (const exec::OpComparison& o : c.ops)
    out << fmt::format("  {:<14} {:>6} {:>12.4f} {:>12.4f} {:>12.4f} {:>12.4f} {:>+7.1f}%\n", model::to_string(o.op),
                       o.tasks, o.simulated_median_ms, o.simulated_p95_ms, o.measured_median_ms, o.measured_p95_ms,
                       o.error_pct);
  if (!r.measured.proxy_note.empty())
    out << fmt::format("  {} tasks proxied: {}\n",
                       std::count(r.measured.proxied.begin(), r.measured.proxied.end(), true), r.measured.proxy_note);
}

void run_execute(const ExecuteCliOptions& o, CliContext& context) {
  check_stdout_outputs(o.json, {{"--trace", o.trace}, {"-o", o.output}});
  if (!o.output.empty() && !o.compare)
    throw Error(ErrorKind::Input, "-o: writes the comparison JSON; give --compare");
  std::vector<std::string> sets = o.sets;
  if (!o.profile.empty()) sets.push_back("profile_ref=" + o.profile);
  // A scenario, or a plan written by `plan -o`: its planned run (io/plan_reader.hpp).
  const plan::ScenarioRun run(io::load_scenario_or_plan(o.scenario, parse_overrides(sets)));
  check_executable(run.spec());
  const std::string requested = o.schedule.empty() ? run.spec().schedule.name : o.schedule;
  const std::vector<std::string> schedules = runnable_schedules(run, requested, context.err);
  const bool several = schedules.size() > 1;
  for (const auto& [option, path] : {std::pair{"--trace", o.trace}, std::pair{"-o", o.output}})
    if (several && path == "-")
      throw Error(ErrorKind::Input,
                  fmt::format("{} -: several schedules write one file each (NAME.<schedule>.EXT); name a file", option));
  const std::unique_ptr<exec::Backend> backend = exec::make_backend(o.backend);
  exec::ExecuteOptions options;
  options.iterations = o.iterations;
  options.warmup_iterations = o.warmup;
  options.progress = &context.err;
  io::Json::Array list;
  for (const std::string& schedule : schedules) {
    const ExecutedSchedule r = execute_schedule(run, schedule, o.degree, *backend, options);
    if (!r.measured.complete) continue;  // an MPI process other than 0: process 0 reports
    if (!o.trace.empty())
      context.outputs.add(per_schedule(o.trace, schedule, several),
                          output::ChromeTraceWriter().with_dependencies().write(r.graph, r.measured.timeline));
    const io::Json j = result_to_json(run.spec().name, r, o.compare);
    if (!o.output.empty()) context.outputs.add(per_schedule(o.output, schedule, several), j.dump() + "\n");
    if (o.json)
      list.push_back(j);
    else
      print_text(run.spec().name, r, o.compare, context.out);
  }
  if (o.json && !list.empty())
    context.out << (requested != "all" ? list.front() : io::Json(std::move(list))).dump() << '\n';
}

}  // namespace

void add_execute_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<ExecuteCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "execute", "Replay a scenario's task graph with real work on a backend and measure it (docs/cli.md)");
  cmd->add_option("scenario", o->scenario, "Scenario (bundled name or path)")->required();
  cmd->add_option("--backend", o->backend, "host (threads and MPI on this machine) or cuda")->required();
  cmd->add_option("--profile", o->profile, "Cost profile that prices the simulation (bundled name or path)");
  cmd->add_option("--schedule", o->schedule, "A schedule name, or all (default: the scenario's)");
  add_number_option(cmd, "request.degree", o->degree, "Overlap degree, as simulate --degree");
  add_number_option(cmd, "request.iterations", o->iterations,
                    "Measured iterations; the median one is reported (default 3)");
  add_number_option(cmd, "request.warmup", o->warmup, "Warm-up iterations, not measured (default 1)");
  cmd->add_flag("--compare", o->compare, "Compare with the simulation: per op class, iteration, exposed communication");
  cmd->add_option("--trace", o->trace, "Write the measured Chrome trace (the layout simulate --trace writes)");
  cmd->add_flag("--json", o->json, "Print JSON: one object, or an array with --schedule all");
  cmd->add_option("-o,--output", o->output, "Write the comparison JSON to a file (with --compare)");
  cmd->add_option("--set", o->sets, "Override a scalar field: field.path=value (repeatable)");
  cmd->callback([o, &context] { run_execute(*o, context); });
}

}  // namespace moeplan::cli
