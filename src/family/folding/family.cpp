#include <moeplan/family/folding/family.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/family/folding/rules.hpp>
#include <moeplan/plan/open_knobs.hpp>
#include <moeplan/plan/mapping_search.hpp>
#include <moeplan/plan/overlap_plan.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::folding {
namespace {

// The families whose scenarios run named schedules, for what folding refuses.
std::string schedule_families() { return model::join_names_and(model::families_naming_schedules()); }

cost::MappingConfig own_mapping(const model::ScenarioSpec& s) {
  return cost::MappingConfig::from(s.parallel, s.workload.micro_batch_size);
}

class Folding final : public plan::Family {
 public:
  const model::FamilyRules& rules() const override { return folding::rules(); }

  // Folding runs no named schedule: it searches mappings.
  std::unique_ptr<plan::ScheduleMaker> schedule_maker(const model::ScenarioSpec&,
                                                      const cost::CostModel&) const override {
    return nullptr;
  }

  // The scenario's own mapping, priced as the planner prices every mapping;
  // its pipeline is the graph (one rank per stage).
  plan::Simulation simulate(const plan::ScenarioRun& run, const plan::SimulateRequest& request) const override {
    if (request.schedule)
      throw Error(ErrorKind::Input,
                  fmt::format("a folding scenario has no overlap schedule (the option applies to {} scenarios); its "
                              "pipeline follows parallelism.pp and parallelism.vpp",
                              schedule_families()),
                  "request.schedule");
    if (request.degree)
      throw Error(ErrorKind::Input,
                  fmt::format("applies to {} scenarios; a folding scenario's pipeline degree is parallelism.pp",
                              schedule_families()),
                  "request.degree");
    plan::Simulation out;
    plan::MappingTrace trace;
    out.mapping = plan::price_mapping(run.spec(), run.costs(), own_mapping(run.spec()), &trace);
    out.mapping_trace = std::move(trace);
    return out;
  }

  plan::ScenarioGraph graph(const plan::ScenarioRun& run, const std::string& schedule,
                            std::optional<std::int64_t> degree) const override {
    const model::ScenarioSpec& spec = run.spec();
    if (!schedule.empty())
      throw Error(ErrorKind::Input,
                  "a folding scenario has no overlap schedule; its pipeline follows parallelism.pp and parallelism.vpp",
                  "request.schedule");
    if (degree) throw Error(ErrorKind::Input, "a folding scenario's pipeline degree is parallelism.pp", "request.degree");
    plan::MappingTrace trace;
    plan::price_mapping(spec, run.costs(), own_mapping(spec), &trace);
    // The pipeline graph's ranks are its stages, each standing for its stage's GPUs.
    plan::ScenarioGraph out{std::move(trace.built), std::move(trace.timeline), true, ""};
    out.note = fmt::format(
        "{}'s pipeline graph has one rank per pipeline stage ({}), each standing for every GPU of its stage, and its "
        "chunk and optimizer tasks for the work and collectives folding prices per stage; folding builds no graph of "
        "every rank",
        spec.name, spec.parallel.pp);
    return out;
  }

  bool searches_mappings() const override { return true; }

  plan::PlanResult plan(const plan::ScenarioRun& run, const plan::PlanRequest& request) const override {
    if (request.schedule != "all")
      throw Error(ErrorKind::Input,
                  fmt::format("a folding scenario has no overlap schedule (the option applies to {} scenarios); plan "
                              "searches its mappings",
                              schedule_families()),
                  "request.schedule");
    plan::PlanResult r = plan::plan_result_for(run);
    std::vector<plan::MappingResult> folded =
        plan::search_mappings(run.spec(), run.costs(), "folded", request.threads, &r.threads, request.progress);
    std::vector<plan::MappingResult> coupled =
        plan::search_mappings(run.spec(), run.costs(), "coupled", request.threads, &r.threads, request.progress);
    if (folded.empty() || !folded.front().fits)
      throw Error(ErrorKind::Runtime, fmt::format("no mapping of {} fits in GPU memory", run.spec().name));
    // search_mappings ranks those that fit first: they are the candidates.
    for (const plan::MappingResult& f : folded)
      if (f.fits) r.candidates.push_back(plan::mapping_candidate("folded", f));
    r.chosen = r.candidates.front();
    if (!coupled.empty() && coupled.front().fits) r.baselines.push_back({"coupled", coupled.front().iteration_ms});
    r.search = std::make_shared<FoldingRecord>(std::move(folded), std::move(coupled));
    return r;
  }

  std::vector<plan::PointResult> sweep_point(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                             const std::vector<std::string>& modes, unsigned threads) const override {
    std::vector<plan::PointResult> out;
    for (const std::string& mode : modes) {
      const std::vector<plan::MappingResult> ranked = plan::search_mappings(s, costs, mode, threads);
      plan::PointResult r;
      r.evaluation.schedule = mode;
      r.evaluation.iteration_ms = std::numeric_limits<double>::quiet_NaN();  // no mapping fits
      if (!ranked.empty() && ranked.front().fits) {
        const plan::MappingResult& best = ranked.front();
        r.evaluation.iteration_ms = best.iteration_ms;
        r.evaluation.degree = best.config.pp;
        r.evaluation.bubble_ms = best.breakdown.pp_bubble_ms;
        r.knobs.parallelism = best.config.parallel_spec();
        r.knobs.micro_batch_size = best.config.micro_batch;
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  plan::CandidateRun run_candidate(const plan::ScenarioRun& run, const plan::PlanResult& result,
                                   const plan::Candidate& c) const override {
    (void)result;
    plan::MappingTrace trace;
    plan::price_mapping(plan::with_knob_choices(run.spec(), c.knobs), run.costs(),
                        cost::MappingConfig::from(*c.knobs.parallelism, *c.knobs.micro_batch_size), &trace);
    return {std::move(trace.built), std::move(trace.timeline)};
  }

  std::optional<plan::BaselineRun> run_baseline(const plan::ScenarioRun& run,
                                                const plan::PlanResult& result) const override {
    const auto* record = result.search_as<FoldingRecord>();
    if (record == nullptr || result.baseline("coupled") == nullptr || record->coupled().empty()) return std::nullopt;
    const plan::Candidate coupled = plan::mapping_candidate("coupled", record->coupled().front());
    return plan::BaselineRun{run_candidate(run, result, coupled), coupled.knobs};
  }

  std::string emit_format() const override { return "megatron"; }

  std::optional<std::string> replay_refusal() const override {
    return fmt::format(
        "a folding scenario (pipeline stages with P2P between them) has no replay; execute runs {} scenarios in "
        "schedule.mode multi_rank",
        model::join_names_and(model::families_naming_schedules()));
  }
};

}  // namespace

const plan::Family& family() {
  static const Folding f;
  return f;
}

}  // namespace moeplan::folding
