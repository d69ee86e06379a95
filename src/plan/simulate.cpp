#include <moeplan/plan/simulate.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/parallel.hpp>

namespace moeplan::plan {

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

void refuse_noise(const model::ScenarioSpec& spec, const char* command) {
  if (spec.schedule.compute_jitter_cv > 0)
    throw Error(ErrorKind::Input,
                fmt::format("{} ranks schedules on the noiseless model; `moeplan simulate` reports the mean and p95 "
                            "iteration under noise (scenario {})",
                            command, quoted_for_error(spec.name)),
                "schedule.compute_jitter_cv");
}

}  // namespace moeplan::plan
