#include <moeplan/family/fsmoe/family.hpp>

#include <algorithm>
#include <cmath>
#include <mutex>

#include <moeplan/core/error.hpp>
#include <moeplan/family/fsmoe/builder.hpp>
#include <moeplan/family/fsmoe/closed_form.hpp>
#include <moeplan/family/fsmoe/rules.hpp>
#include <moeplan/plan/overlap_plan.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::fsmoe {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The closed forms' plan of a scenario, derived once (every schedule built from it reuses it).
class Maker final : public plan::ScheduleMaker {
 public:
  Maker(const model::ScenarioSpec& s, const cost::CostModel& costs) : s_(s), costs_(costs) {}

  sched::BuiltSchedule build(const std::string& schedule, std::optional<std::int64_t> degree) const override {
    return build_fsmoe(s_, costs_, knobs(schedule, degree));
  }
  sched::BuiltSchedule build_for_replay(const std::string& schedule,
                                        std::optional<std::int64_t> degree) const override {
    FsMoeKnobs k = knobs(schedule, degree);
    k.record_work = true;
    return build_fsmoe(s_, costs_, k);
  }

 private:
  FsMoeKnobs knobs(const std::string& schedule, std::optional<std::int64_t> degree) const {
    FsMoeKnobs knobs = fsmoe_knobs(closed_forms(), schedule);
    if (degree) {
      knobs.degree_forward = knobs.degree_backward = *degree;
      knobs.degree_backward_per_layer.clear();
    }
    return knobs;
  }

  // Schedules are built from several threads at once (plan::simulate_schedules).
  const FsMoePlan& closed_forms() const {
    std::call_once(once_, [&] { plan_ = plan_fsmoe(s_, costs_, {}); });
    return plan_;
  }

  const model::ScenarioSpec& s_;
  const cost::CostModel& costs_;
  mutable std::once_flag once_;
  mutable FsMoePlan plan_;
};

// The planner on a probe (OverlapProbing::prepare_probe).
struct ProbePlan final : plan::ProbeSetup {
  FsMoePlan plan;
};

// FSMoE's knobs on a probe as plan_fsmoe derives them for an FSMoE scenario
// (the closed forms' degree per phase, section 5's gradient partition), but
// PipeMoE's adaptive r for Tutel simulated at the allowed powers of two only
// (the released solver's kind of degree): plan_fsmoe simulates every allowed
// r up to 32, which took over half of the joint search's time.
FsMoePlan probe_plan(const model::ScenarioSpec& probe, const cost::CostModel& costs) {
  FsMoePlan out;
  const std::vector<std::int64_t> allowed = allowed_degrees(expert_capacity_tokens(probe));
  out.degrees = choose_degrees(fsmoe_layer_model(probe, costs, false), fsmoe_layer_model(probe, costs, true), allowed,
                               ReleasedSolverRules{false, 1.0});
  out.partition = partition_gradients(probe, costs, allowed, out.degrees.backward.r);
  std::optional<double> best_ms;
  for (std::int64_t r : allowed) {
    if ((r & (r - 1)) != 0) continue;  // not a power of two
    FsMoeKnobs k;
    k.schedule = "tutel";
    k.degree_forward = k.degree_backward = r;
    const double ms = plan::run_schedule(build_fsmoe(probe, costs, k)).makespan_ms;
    if (!best_ms || ms < *best_ms) {  // ascending r: ties keep the smaller
      best_ms = ms;
      out.tutel_degree = r;
    }
  }
  return out;
}

class Probing final : public plan::OverlapProbing {
 public:
  // Its closed forms choose r per phase on each probe.
  std::vector<std::int64_t> probe_degrees(const model::ScenarioSpec&) const override { return {0}; }
  std::unique_ptr<plan::ProbeSetup> prepare_probe(const model::ScenarioSpec& probe,
                                                  const cost::CostModel& costs) const override {
    auto setup = std::make_unique<ProbePlan>();
    setup->plan = probe_plan(probe, costs);
    return setup;
  }
  sched::BuiltSchedule build_probe(const model::ScenarioSpec& probe, const cost::CostModel& costs,
                                   const std::string& schedule, std::int64_t,
                                   const plan::ProbeSetup* setup) const override {
    if (setup != nullptr) return build_fsmoe(probe, costs, fsmoe_knobs(planned(setup), schedule));
    MOEPLAN_CHECK(schedule == "none", "an FSMoE schedule is probed at its planner's knobs");
    FsMoeKnobs none;  // no degrees, no partition: no planner to run
    none.schedule = "none";
    return build_fsmoe(probe, costs, none);
  }
  std::pair<std::int64_t, std::int64_t> built_degrees(const plan::ProbeSetup* setup, const std::string& schedule,
                                                      std::int64_t) const override {
    const FsMoeKnobs k = fsmoe_knobs(planned(setup), schedule);
    return {k.degree_forward, k.degree_backward};
  }
  const char* degree_symbol() const override { return "r"; }
  bool per_phase_degrees() const override { return true; }

 private:
  static const FsMoePlan& planned(const plan::ProbeSetup* setup) {
    const auto* p = dynamic_cast<const ProbePlan*>(setup);
    MOEPLAN_CHECK(p != nullptr, "an FSMoE probe's setup is its planner");
    return p->plan;
  }
};

class FsMoe final : public plan::Family {
 public:
  const model::FamilyRules& rules() const override { return fsmoe::rules(); }

  std::unique_ptr<plan::ScheduleMaker> schedule_maker(const model::ScenarioSpec& s,
                                                      const cost::CostModel& costs) const override {
    return std::make_unique<Maker>(s, costs);
  }

  plan::PlanResult plan(const plan::ScenarioRun& run, const plan::PlanRequest& request) const override {
    plan::PlanResult r = plan::plan_result_for(run);
    const std::vector<std::string> requested = run.runnable_schedules(request.schedule, &r.notes);
    // Every schedule is evaluated: none and tutel are the baselines.
    FsMoePlan p = plan_fsmoe(run.spec(), run.costs(), rules().schedules(), request.threads);
    r.threads = p.threads;
    for (std::size_t i = 0; i < p.schedules.size(); ++i) {
      const plan::Evaluation& e = p.schedules[i];
      if (e.schedule == "none" || e.schedule == "tutel") r.baselines.push_back({e.schedule, e.iteration_ms});
      if (!contains(requested, e.schedule)) continue;
      // Each schedule's own knobs: the closed forms' degrees and partition
      // for fsmoe and fsmoe-no-iio, Tutel's adaptive r for the others.
      r.candidates.push_back(plan::schedule_candidate(run, e, plan_knobs(p.knobs[i])));
    }
    plan::rank_candidates(r.candidates);
    r.chosen = r.candidates.front();
    r.search = std::make_shared<FsMoeRecord>(std::move(p));
    return r;
  }

  std::vector<plan::PointResult> sweep_point(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                             const std::vector<std::string>& schedules,
                                             unsigned threads) const override {
    const FsMoePlan p = plan_fsmoe(s, costs, schedules, threads);
    std::vector<plan::PointResult> out;
    for (std::size_t i = 0; i < p.schedules.size(); ++i) out.push_back({p.schedules[i], plan_knobs(p.knobs[i])});
    return out;
  }

  plan::CandidateRun run_candidate(const plan::ScenarioRun& run, const plan::PlanResult& result,
                                   const plan::Candidate& c) const override {
    (void)result;
    // The degrees and partition are the closed forms' answer on this cost model.
    model::ScheduleSpec fields = run.spec().schedule;
    fields.name = c.schedule;
    return plan::run_on_scenario(run, fields, c.schedule, std::nullopt);
  }

  std::optional<plan::BaselineRun> run_baseline(const plan::ScenarioRun& run,
                                                const plan::PlanResult& result) const override {
    if (result.baseline("none") == nullptr) return std::nullopt;
    plan::Candidate none;
    none.schedule = "none";
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

model::PlanKnobs plan_knobs(const FsMoeKnobs& k) {
  model::PlanKnobs knobs;
  knobs.degree_forward = k.degree_forward;
  knobs.degree_backward = k.degree_backward;
  for (std::size_t l = 0; l < k.grad_during_moe_bytes.size(); ++l)
    knobs.grad_partition_bytes.push_back(
        static_cast<std::int64_t>(std::llround(k.grad_during_moe_bytes[l] + k.grad_during_dense_bytes[l])));
  return knobs;
}

const plan::Family& family() {
  static const FsMoe f;
  return f;
}

}  // namespace moeplan::fsmoe
