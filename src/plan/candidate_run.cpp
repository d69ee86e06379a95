#include <moeplan/plan/candidate_run.hpp>

#include <moeplan/plan/evaluation.hpp>

namespace moeplan::plan {
namespace {

// The degree schedule `name` was evaluated at in the search record (none is evaluated at one).
std::optional<std::int64_t> searched_degree(const PlanResult& r, const std::string& name) {
  if (const auto* p = std::get_if<FoldMoePlan>(&r.search))
    for (const ScheduleChoice& c : p->schedules)
      if (c.best.schedule == name) return c.best.degree;
  if (const auto* p = std::get_if<FlowMoePlan>(&r.search))
    for (const FlowMoeChoice& c : p->schedules)
      if (c.best.schedule == name) return c.best.degree;
  return std::nullopt;
}

}  // namespace

CandidateRun run_candidate(const ScenarioRun& run, const PlanResult& r, const Candidate& c) {
  const model::PlanKnobs& k = c.knobs;
  if (r.family == "folding") {
    FoldingTrace trace;
    price_mapping(run.spec(), run.costs(), FoldingConfig::from(*k.parallelism, *k.micro_batch_size), {}, &trace);
    return {std::move(trace.built), std::move(trace.timeline)};
  }
  model::ScenarioSpec s = run.spec();
  s.schedule.name = c.schedule;
  if (r.family == "foldmoe" && (c.schedule == "aaam" || c.schedule == "1a1m")) s.schedule.slicing_tokens = k.slicing_tokens;
  if (k.ar_chunk_bytes) s.schedule.ar_chunk_bytes = k.ar_chunk_bytes;
  const ScenarioRun again(std::move(s));
  // FSMoE's degrees and partition are the closed forms' answer on this cost model.
  const std::optional<std::int64_t> degree = r.family == "fsmoe" ? std::nullopt : k.degree;
  sched::BuiltSchedule built = again.build(c.schedule, degree);
  sim::Timeline timeline = run_schedule(built);
  return {std::move(built), std::move(timeline)};
}

std::optional<CandidateRun> run_baseline(const ScenarioRun& run, const PlanResult& r) {
  if (const auto* search = std::get_if<FoldingSearch>(&r.search)) {
    if (r.baseline("coupled") == nullptr || search->coupled.empty()) return std::nullopt;
    const FoldingConfig& c = search->coupled.front().config;
    Candidate coupled;
    coupled.schedule = "coupled";
    coupled.knobs.parallelism = c.parallel_spec();
    coupled.knobs.micro_batch_size = c.micro_batch;
    return run_candidate(run, r, coupled);
  }
  if (r.baseline("none") == nullptr) return std::nullopt;
  Candidate none;
  none.schedule = "none";
  none.knobs.degree = searched_degree(r, "none");
  return run_candidate(run, r, none);
}

}  // namespace moeplan::plan
