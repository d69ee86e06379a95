#include <moeplan/family/flowmoe/family.hpp>

#include <algorithm>

#include <moeplan/family/flowmoe/builder.hpp>
#include <moeplan/family/flowmoe/rules.hpp>
#include <moeplan/plan/overlap_plan.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::flowmoe {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Sp where nothing sets it: a quarter of the largest per-block tensor, at
// least 128 KiB (FlowMoE's code starts its BO at 4 MiB).
std::int64_t default_chunk_bytes(const model::ScenarioSpec& s) {
  const auto [lo, hi] = chunk_search_space(s);
  return std::max(lo, hi / 4);
}

class Maker final : public plan::ScheduleMaker {
 public:
  Maker(const model::ScenarioSpec& s, const cost::CostModel& costs) : s_(s), costs_(costs) {}

  sched::BuiltSchedule build(const std::string& schedule, std::optional<std::int64_t> degree) const override {
    return build_flowmoe(s_, costs_, knobs(schedule, degree));
  }
  sched::BuiltSchedule build_for_replay(const std::string& schedule,
                                        std::optional<std::int64_t> degree) const override {
    FlowMoeKnobs k = knobs(schedule, degree);
    k.record_work = true;
    return build_flowmoe(s_, costs_, k);
  }
  // Symmetric mode prices each layer's AlltoAll at its own most loaded rank.
  bool routing_priced_per_layer() const override { return true; }

 private:
  FlowMoeKnobs knobs(const std::string& schedule, std::optional<std::int64_t> degree) const {
    // R: the request's, else the scenario's, else FlowMoE's default 2 (its
    // code fixes R = 2); Sp: the scenario's, else default_chunk_bytes.
    const std::int64_t chunk = s_.schedule.ar_chunk_bytes.value_or(default_chunk_bytes(s_));
    return flowmoe_knobs(s_, schedule, degree.value_or(s_.schedule.degree.value_or(2)), chunk);
  }

  const model::ScenarioSpec& s_;
  const cost::CostModel& costs_;
};

class Probing final : public plan::OverlapProbing {
 public:
  std::vector<std::int64_t> probe_degrees(const model::ScenarioSpec&) const override { return flowmoe_degrees(); }
  sched::BuiltSchedule build_probe(const model::ScenarioSpec& probe, const cost::CostModel& costs,
                                   const std::string& schedule, std::int64_t degree,
                                   const plan::ProbeSetup*) const override {
    // Sp as FlowMoE's code starts its search; not tuned here.
    return build_flowmoe(probe, costs, flowmoe_knobs(probe, schedule, degree, default_chunk_bytes(probe)));
  }
  const char* degree_symbol() const override { return "R"; }
};

model::PlanKnobs knobs_of(const FlowMoeChoice& c) {
  model::PlanKnobs knobs;
  knobs.degree = c.best.degree;
  if (c.ar_chunk_bytes > 0) knobs.ar_chunk_bytes = c.ar_chunk_bytes;
  return knobs;
}

class FlowMoe final : public plan::Family {
 public:
  const model::FamilyRules& rules() const override { return flowmoe::rules(); }

  std::unique_ptr<plan::ScheduleMaker> schedule_maker(const model::ScenarioSpec& s,
                                                      const cost::CostModel& costs) const override {
    return std::make_unique<Maker>(s, costs);
  }

  plan::PlanResult plan(const plan::ScenarioRun& run, const plan::PlanRequest& request) const override {
    plan::PlanResult r = plan::plan_result_for(run);
    const std::vector<std::string> requested = run.runnable_schedules(request.schedule, &r.notes);
    FlowMoePlan p = plan_flowmoe(run.spec(), run.costs(), rules().schedules(), {}, request.threads, request.progress);
    r.threads = p.threads;
    for (const FlowMoeChoice& c : p.schedules) {
      if (c.best.schedule == "none" || c.best.schedule == "tutel")
        r.baselines.push_back({c.best.schedule, c.best.iteration_ms});
      if (!contains(requested, c.best.schedule)) continue;
      r.candidates.push_back(plan::schedule_candidate(run, c.best, knobs_of(c)));
    }
    plan::rank_candidates(r.candidates);
    r.chosen = r.candidates.front();
    r.search = std::make_shared<FlowMoeRecord>(std::move(p));
    return r;
  }

  std::vector<plan::PointResult> sweep_point(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                             const std::vector<std::string>& schedules,
                                             unsigned threads) const override {
    std::vector<plan::PointResult> out;
    for (const FlowMoeChoice& c : plan_flowmoe(s, costs, schedules, {}, threads).schedules)
      out.push_back({c.best, knobs_of(c)});
    return out;
  }

  plan::CandidateRun run_candidate(const plan::ScenarioRun& run, const plan::PlanResult& result,
                                   const plan::Candidate& c) const override {
    (void)result;
    model::ScheduleSpec fields = run.spec().schedule;
    fields.name = c.schedule;
    if (c.knobs.ar_chunk_bytes) fields.ar_chunk_bytes = c.knobs.ar_chunk_bytes;
    return plan::run_on_scenario(run, fields, c.schedule, c.knobs.degree);
  }

  std::optional<plan::BaselineRun> run_baseline(const plan::ScenarioRun& run,
                                                const plan::PlanResult& result) const override {
    if (result.baseline("none") == nullptr) return std::nullopt;
    plan::Candidate none;
    none.schedule = "none";
    if (const plan::Evaluation* e = result.search->evaluation("none")) none.knobs.degree = e->degree;
    plan::BaselineRun out{run_candidate(run, result, none), {}};
    out.knobs.degree = out.run.built.degree;
    return out;
  }

  std::string emit_format() const override { return "knobs"; }
  const plan::OverlapProbing* overlap() const override { return &probing_; }

 private:
  Probing probing_;
};

}  // namespace

const plan::Family& family() {
  static const FlowMoe f;
  return f;
}

}  // namespace moeplan::flowmoe
