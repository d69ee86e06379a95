#include "execute_support.hpp"

#include <moeplan/core/error.hpp>
#include <moeplan/exec/replay_plan.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/family_registry.hpp>

namespace moeplan::cli {

void check_executable(const model::ScenarioSpec& spec) {
  if (const auto why = plan::family_of(spec).replay_refusal()) throw Error(ErrorKind::Input, *why, "schedule.family");
}

ExecutedSchedule execute_schedule(const plan::ScenarioRun& run, const std::string& schedule,
                                  std::optional<std::int64_t> degree, exec::Backend& backend,
                                  const exec::ExecuteOptions& options) {
  sched::BuiltSchedule built = run.build_for_replay(schedule, degree);
  ExecutedSchedule r;
  r.schedule = built.schedule;
  r.degree = built.degree;
  r.backend = backend.name();
  r.tasks = built.graph.size();
  r.simulated = plan::run_schedule(built);
  const exec::ReplayPlan replay = exec::make_replay_plan(built.graph);
  r.measured = backend.run(built.graph, replay, options);
  if (r.measured.complete) r.comparison = exec::compare(built.graph, r.simulated, r.measured.timeline);
  r.graph = std::move(built.graph);
  return r;
}

}  // namespace moeplan::cli
