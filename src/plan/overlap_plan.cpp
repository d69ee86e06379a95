#include <moeplan/plan/overlap_plan.hpp>

#include <fmt/format.h>

#include <moeplan/plan/result_json.hpp>

namespace moeplan::plan {

PlanResult plan_result_for(const ScenarioRun& run) {
  PlanResult r;
  r.scenario = run.spec().name;
  r.family = run.spec().schedule.family;
  r.tokens_per_iteration =
      static_cast<double>(run.spec().workload.global_batch_size) * static_cast<double>(run.spec().workload.seq_len);
  return r;
}

Candidate schedule_candidate(const ScenarioRun& run, const Evaluation& e, model::PlanKnobs knobs) {
  Candidate c;
  c.schedule = e.schedule;
  c.knobs = std::move(knobs);
  c.iteration_ms = e.iteration_ms;
  c.memory_bytes_per_gpu = run.memory_bytes_per_gpu();
  c.fits = run.fits_in_memory();
  return c;
}

void write_overlap_keys(io::Json& doc, const PlanResult& r) {
  const double tutel_ms = r.baseline("tutel")->iteration_ms;
  doc.set("tutel_ms", tutel_ms);
  doc.set("memory_bytes_per_gpu", r.chosen.memory_bytes_per_gpu);
  doc.set("fits", r.chosen.fits);
  doc.set("speedup_vs_tutel", tutel_ms / r.chosen.iteration_ms);
}

io::Json schedule_entry(const PlanResult& r, const Evaluation& e) {
  io::Json entry = evaluation_to_json(r.scenario, e);
  entry.set("speedup_vs_none", r.baseline("none")->iteration_ms / e.iteration_ms);
  entry.set("speedup_vs_tutel", r.baseline("tutel")->iteration_ms / e.iteration_ms);
  return entry;
}

std::string knobs_emit_header(const PlanResult& r) {
  return fmt::format("# {} plan for {}: {} ms per iteration\nschedule={}\n", r.family, r.scenario,
                     r.chosen.iteration_ms, r.chosen.schedule);
}

CandidateRun run_on_scenario(const ScenarioRun& run, const model::ScheduleSpec& fields, const std::string& schedule,
                             std::optional<std::int64_t> degree) {
  model::ScenarioSpec s = run.spec();
  s.schedule = fields;
  const ScenarioRun again(std::move(s));
  sched::BuiltSchedule built = again.build(schedule, degree);
  sim::Timeline timeline = run_schedule(built);
  return {std::move(built), std::move(timeline)};
}

}  // namespace moeplan::plan
