#include <moeplan/plan/simulate.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/parallel.hpp>

namespace moeplan::plan {

Simulation simulate(const ScenarioRun& run, const SimulateRequest& request) {
  refuse_search(run.spec(), "simulate");
  return run.family().simulate(run, request);
}

std::vector<SimulatedSchedule> simulate_schedules(const ScenarioRun& run, const std::vector<std::string>& schedules,
                                                  std::optional<std::int64_t> degree, unsigned threads,
                                                  bool keep_graphs, unsigned* started) {
  std::vector<SimulatedSchedule> results(schedules.size());
  const unsigned ran = parallel_for(schedules.size(), threads, [&](std::size_t i) {
    sched::BuiltSchedule built = run.build(schedules[i], degree);
    sim::Timeline timeline = run_schedule(built);
    results[i].evaluation = evaluate(built, timeline);
    if (const Noise noise = noise_of(run.spec()); noise.compute_jitter_cv > 0)
      results[i].noise = run_with_noise(built, noise);
    results[i].evaluation.routing = run.routing_report(built);
    if (keep_graphs) {
      results[i].timeline = std::move(timeline);
      results[i].built = std::move(built);
    }
  });
  if (started != nullptr) *started = ran;
  return results;
}

Simulation Family::simulate(const ScenarioRun& run, const SimulateRequest& request) const {
  Simulation out;
  const std::string requested = request.schedule.value_or(run.spec().schedule.name);
  const std::vector<std::string> names = run.runnable_schedules(requested, &out.notes);
  out.all = requested == "all";
  out.schedules =
      simulate_schedules(run, names, request.degree, request.threads, request.keep_graphs, &out.threads_started);
  return out;
}

ScenarioGraph Family::graph(const ScenarioRun& run, const std::string& schedule,
                            std::optional<std::int64_t> degree) const {
  const model::ScenarioSpec& spec = run.spec();
  const std::string requested = schedule.empty() ? spec.schedule.name : schedule;
  if (requested == "all")
    throw Error(ErrorKind::Input, "a trace holds one schedule; name one (export each to its own folder)",
                "request.schedule");
  const std::vector<std::string> names = run.runnable_schedules(requested);
  MOEPLAN_CHECK(names.size() == 1, "one named schedule runs or is refused");
  // With each compute task's work shape: a trace gives the bytes it moves.
  ScenarioGraph out{run.build_for_replay(names.front(), degree), {}, !spec.schedule.multi_rank, ""};
  out.timeline = run_schedule(out.built);
  if (out.representative)
    out.note = fmt::format(
        "{} runs in symmetric mode: its graph holds rank 0 alone, standing for every rank (schedule.mode=multi_rank "
        "builds every rank)",
        spec.name);
  return out;
}

ScenarioGraph scenario_graph(const ScenarioRun& run, const std::string& schedule, std::optional<std::int64_t> degree) {
  return run.family().graph(run, schedule, degree);
}

void refuse_noise(const model::ScenarioSpec& spec, const char* command) {
  if (spec.schedule.compute_jitter_cv > 0)
    throw Error(ErrorKind::Input,
                fmt::format("{} ranks schedules on the noiseless model; `moeplan simulate` reports the mean and p95 "
                            "iteration under noise (scenario {})",
                            command, quoted_for_error(spec.name)),
                "schedule.compute_jitter_cv");
}

void refuse_search(const model::ScenarioSpec& spec, const char* command) {
  if (spec.schedule.search.empty()) return;
  throw Error(ErrorKind::Input,
              fmt::format("{} runs one configuration, and scenario {} leaves {} to the planner: `moeplan plan` "
                          "chooses it (and `simulate` runs the plan file it writes), or set it and drop schedule.search",
                          command, quoted_for_error(spec.name), fmt::join(spec.schedule.search, " and ")),
              "schedule.search");
}

}  // namespace moeplan::plan
