#include <moeplan/family/foldmoe/family.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/family/foldmoe/builder.hpp>
#include <moeplan/family/foldmoe/rules.hpp>
#include <moeplan/plan/overlap_plan.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::foldmoe {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The schedules whose slices the scenario's schedule.slicing fixes.
bool takes_slicing(const std::string& schedule) { return schedule == "aaam" || schedule == "1a1m"; }

class Maker final : public plan::ScheduleMaker {
 public:
  Maker(const model::ScenarioSpec& s, const cost::CostModel& costs) : s_(s), costs_(costs) {}

  sched::BuiltSchedule build(const std::string& schedule, std::optional<std::int64_t> degree) const override {
    return build_foldmoe(s_, costs_, knobs(schedule, degree));
  }
  sched::BuiltSchedule build_for_replay(const std::string& schedule,
                                        std::optional<std::int64_t> degree) const override {
    sched::ScheduleKnobs k = knobs(schedule, degree);
    k.record_work = true;
    return build_foldmoe(s_, costs_, k);
  }

 private:
  sched::ScheduleKnobs knobs(const std::string& schedule, std::optional<std::int64_t> degree) const {
    // d from the request, else the scenario's, else 4 (the middle of the
    // paper's 2..16); the scenario's slicing for the schedules it applies to.
    sched::ScheduleKnobs knobs{schedule, degree.value_or(s_.schedule.degree.value_or(4)), {}};
    knobs.multi_rank = s_.schedule.multi_rank;
    if (takes_slicing(schedule)) {
      knobs.slicing_tokens = s_.schedule.slicing_tokens;
      if (!knobs.slicing_tokens.empty() && degree && *degree != static_cast<std::int64_t>(knobs.slicing_tokens.size()))
        throw Error(ErrorKind::Input,
                    fmt::format("{} disagrees with schedule.slicing's {} slices", *degree, knobs.slicing_tokens.size()),
                    "request.degree");
    }
    return knobs;
  }

  const model::ScenarioSpec& s_;
  const cost::CostModel& costs_;
};

class Probing final : public plan::OverlapProbing {
 public:
  std::vector<std::int64_t> probe_degrees(const model::ScenarioSpec& probe) const override {
    // FoldMoE's own search space (foldmoe.md section 5: {2, 4, 8, 16}; `plan`
    // of a FoldMoE scenario tries 1..32). A degree needs a token of each
    // sequence per rank.
    const std::int64_t tokens = probe.workload.seq_len / probe.parallel.tp;
    std::vector<std::int64_t> out;
    for (std::int64_t d = 2; d <= 16 && d <= tokens; d *= 2) out.push_back(d);
    return out;
  }
  sched::BuiltSchedule build_probe(const model::ScenarioSpec& probe, const cost::CostModel& costs,
                                   const std::string& schedule, std::int64_t degree,
                                   const plan::ProbeSetup*) const override {
    return build_foldmoe(probe, costs, {schedule, degree, {}});
  }
  const char* degree_symbol() const override { return "d"; }
};

class FoldMoe final : public plan::Family {
 public:
  const model::FamilyRules& rules() const override { return foldmoe::rules(); }

  std::unique_ptr<plan::ScheduleMaker> schedule_maker(const model::ScenarioSpec& s,
                                                      const cost::CostModel& costs) const override {
    return std::make_unique<Maker>(s, costs);
  }

  plan::PlanResult plan(const plan::ScenarioRun& run, const plan::PlanRequest& request) const override {
    plan::PlanResult r = plan::plan_result_for(run);
    const std::vector<std::string> requested = run.runnable_schedules(request.schedule, &r.notes);
    // The baselines are always evaluated so that speed-ups can be reported.
    std::vector<std::string> searched{"none", "tutel"};
    for (const std::string& s : requested)
      if (s != "none" && s != "tutel") searched.push_back(s);
    FoldMoePlan p = plan_foldmoe(run.spec(), run.costs(), searched, 32, request.threads, request.progress);
    r.threads = p.threads;
    for (const ScheduleChoice& choice : p.schedules) {
      if (!contains(requested, choice.best.schedule)) continue;
      r.candidates.push_back(plan::schedule_candidate(run, choice.best, knobs_of(choice)));
    }
    r.baselines = {{"none", p.schedules[0].best.iteration_ms}, {"tutel", p.schedules[1].best.iteration_ms}};
    plan::rank_candidates(r.candidates);
    r.chosen = r.candidates.front();
    r.search = std::make_shared<FoldMoeRecord>(std::move(p));
    return r;
  }

  std::vector<plan::PointResult> sweep_point(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                             const std::vector<std::string>& schedules,
                                             unsigned threads) const override {
    std::vector<plan::PointResult> out;
    for (const ScheduleChoice& c : plan_foldmoe(s, costs, schedules, 32, threads).schedules)
      out.push_back({c.best, knobs_of(c)});
    return out;
  }

  plan::CandidateRun run_candidate(const plan::ScenarioRun& run, const plan::PlanResult& result,
                                   const plan::Candidate& c) const override {
    (void)result;
    model::ScheduleSpec fields = run.spec().schedule;
    fields.name = c.schedule;
    if (takes_slicing(c.schedule)) fields.slicing_tokens = c.knobs.slicing_tokens;
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
  static model::PlanKnobs knobs_of(const ScheduleChoice& choice) {
    model::PlanKnobs knobs;
    knobs.degree = choice.best.degree;
    knobs.slicing_tokens = choice.slicing_tokens;
    return knobs;
  }

  Probing probing_;
};

}  // namespace

const plan::Family& family() {
  static const FoldMoe f;
  return f;
}

}  // namespace moeplan::foldmoe
