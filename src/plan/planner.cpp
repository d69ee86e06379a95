#include <moeplan/plan/planner.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/families.hpp>
#include <moeplan/plan/plausibility.hpp>

namespace moeplan::plan {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Best first; equal times keep the enumeration order (the earliest wins ties).
void rank(std::vector<Candidate>& candidates) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.iteration_ms < b.iteration_ms; });
}

PlanResult result_header(const ScenarioRun& run, const char* family) {
  PlanResult r;
  r.scenario = run.spec().name;
  r.family = family;
  r.tokens_per_iteration =
      static_cast<double>(run.spec().workload.global_batch_size) * static_cast<double>(run.spec().workload.seq_len);
  return r;
}

// An overlap-family candidate: the scenario's own mapping, so its memory.
Candidate overlap_candidate(const ScenarioRun& run, const Evaluation& e, model::PlanKnobs knobs) {
  Candidate c;
  c.schedule = e.schedule;
  c.knobs = std::move(knobs);
  c.iteration_ms = e.iteration_ms;
  c.memory_bytes_per_gpu = run.memory_bytes_per_gpu();
  c.fits = run.fits_in_memory();
  return c;
}

class FoldMoePlanner final : public Planner {
 public:
  const char* family() const override { return "foldmoe"; }
  PlanResult plan(const ScenarioRun& run, const PlanRequest& request) const override {
    PlanResult r = result_header(run, family());
    const std::vector<std::string> requested = run.runnable_schedules(request.schedule, &r.notes);
    // The baselines are always evaluated so that speed-ups can be reported.
    std::vector<std::string> searched{"none", "tutel"};
    for (const std::string& s : requested)
      if (s != "none" && s != "tutel") searched.push_back(s);
    FoldMoePlan p = plan_foldmoe(run.spec(), run.costs(), searched, 32, request.threads, request.progress);
    r.threads = p.threads;
    for (const ScheduleChoice& choice : p.schedules) {
      if (!contains(requested, choice.best.schedule)) continue;
      model::PlanKnobs knobs;
      knobs.degree = choice.best.degree;
      knobs.slicing_tokens = choice.slicing_tokens;
      r.candidates.push_back(overlap_candidate(run, choice.best, std::move(knobs)));
    }
    r.baselines = {{"none", p.schedules[0].best.iteration_ms}, {"tutel", p.schedules[1].best.iteration_ms}};
    rank(r.candidates);
    r.chosen = r.candidates.front();
    r.search = std::move(p);
    return r;
  }
};

class FsMoePlanner final : public Planner {
 public:
  const char* family() const override { return "fsmoe"; }
  PlanResult plan(const ScenarioRun& run, const PlanRequest& request) const override {
    PlanResult r = result_header(run, family());
    const std::vector<std::string> requested = run.runnable_schedules(request.schedule, &r.notes);
    // Every schedule is evaluated: none and tutel are the baselines.
    FsMoePlan p = plan_fsmoe(run.spec(), run.costs(), model::family_schedules("fsmoe"), request.threads);
    r.threads = p.threads;
    for (std::size_t i = 0; i < p.schedules.size(); ++i) {
      const Evaluation& e = p.schedules[i];
      if (e.schedule == "none" || e.schedule == "tutel")
        r.baselines.push_back({e.schedule, e.iteration_ms});
      if (!contains(requested, e.schedule)) continue;
      // FSMoE's own knobs, the closed forms' degrees and partition (CLI.md `plan`).
      model::PlanKnobs knobs;
      knobs.degree_forward = p.degrees.forward.r;
      knobs.degree_backward = p.degrees.backward.r;
      for (std::size_t l = 0; l < p.partition.during_moe_bytes.size(); ++l)
        knobs.grad_partition_bytes.push_back(static_cast<std::int64_t>(
            std::llround(p.partition.during_moe_bytes[l] + p.partition.during_dense_bytes[l])));
      r.candidates.push_back(overlap_candidate(run, e, std::move(knobs)));
    }
    rank(r.candidates);
    r.chosen = r.candidates.front();
    r.search = std::move(p);
    return r;
  }
};

class FlowMoePlanner final : public Planner {
 public:
  const char* family() const override { return "flowmoe"; }
  PlanResult plan(const ScenarioRun& run, const PlanRequest& request) const override {
    PlanResult r = result_header(run, family());
    const std::vector<std::string> requested = run.runnable_schedules(request.schedule, &r.notes);
    const std::vector<std::string>& all = model::family_schedules("flowmoe");
    FlowMoePlan p = plan_flowmoe(run.spec(), run.costs(), all, {}, request.threads, request.progress);
    r.threads = p.threads;
    for (const FlowMoeChoice& c : p.schedules) {
      if (c.best.schedule == "none" || c.best.schedule == "tutel")
        r.baselines.push_back({c.best.schedule, c.best.iteration_ms});
      if (!contains(requested, c.best.schedule)) continue;
      model::PlanKnobs knobs;
      knobs.degree = c.best.degree;
      if (c.ar_chunk_bytes > 0) knobs.ar_chunk_bytes = c.ar_chunk_bytes;
      r.candidates.push_back(overlap_candidate(run, c.best, std::move(knobs)));
    }
    rank(r.candidates);
    r.chosen = r.candidates.front();
    r.search = std::move(p);
    return r;
  }
};

Candidate folding_candidate(const char* mode, const FoldingResult& f) {
  Candidate c;
  c.schedule = mode;
  c.knobs.parallelism = f.config.parallel_spec();
  c.knobs.micro_batch_size = f.config.micro_batch;
  c.iteration_ms = f.iteration_ms;
  c.memory_bytes_per_gpu = f.memory_bytes_per_gpu;
  c.fits = f.fits;
  c.mfu = f.mfu;
  return c;
}

class FoldingPlanner final : public Planner {
 public:
  const char* family() const override { return "folding"; }
  PlanResult plan(const ScenarioRun& run, const PlanRequest& request) const override {
    if (request.schedule != "all")
      throw Error(ErrorKind::Input,
                  "--schedule: a folding scenario has no overlap schedule (the option applies to foldmoe, fsmoe and "
                  "flowmoe scenarios); plan searches its mappings");
    PlanResult r = result_header(run, family());
    FoldingSearch s;
    s.folded = search_mappings(run.spec(), run.costs(), "folded", request.threads, &r.threads, request.progress);
    s.coupled = search_mappings(run.spec(), run.costs(), "coupled", request.threads, &r.threads, request.progress);
    if (s.folded.empty() || !s.folded.front().fits)
      throw Error(ErrorKind::Runtime, fmt::format("no mapping of {} fits in GPU memory", run.spec().name));
    // search_mappings ranks those that fit first: they are the candidates.
    for (const FoldingResult& f : s.folded)
      if (f.fits) r.candidates.push_back(folding_candidate("folded", f));
    r.chosen = r.candidates.front();
    if (!s.coupled.empty() && s.coupled.front().fits) r.baselines.push_back({"coupled", s.coupled.front().iteration_ms});
    r.search = std::move(s);
    return r;
  }
};

Candidate joint_candidate(const JointResult& j) {
  Candidate c = folding_candidate("", j.priced);
  c.schedule = j.label();
  if (j.overlap.family == "fsmoe") {
    c.knobs.degree_forward = j.degree_forward;
    c.knobs.degree_backward = j.degree_backward;
  } else if (j.overlap.family != "none") {
    c.knobs.degree = j.overlap.degree;
  }
  return c;
}

// The joint search (issue 17 item 3) of a folding scenario: its model, cluster
// and batch, every mapping with every overlap family's schedules.
class JointPlanner final : public Planner {
 public:
  const char* family() const override { return "joint"; }
  PlanResult plan(const ScenarioRun& run, const PlanRequest& request) const override {
    if (run.spec().schedule.family != "folding")
      throw Error(ErrorKind::Input,
                  fmt::format("--joint: searches the mappings of a folding scenario (model, cluster and batch); {} is "
                              "a {} scenario with its mapping fixed",
                              run.spec().name, run.spec().schedule.family));
    if (request.schedule != "all")
      throw Error(ErrorKind::Input,
                  "--schedule: the joint search tries every schedule of every overlap family at every mapping");
    PlanResult r = result_header(run, family());
    JointOptions o;
    o.threads = request.threads;
    o.progress = request.progress;
    JointSearch s = search_joint(run.spec(), run.costs(), o,
                                 FoldingConfig::from(run.spec().parallel, run.spec().workload.micro_batch_size));
    for (const JointResult& j : s.ranked) r.candidates.push_back(joint_candidate(j));
    r.chosen = r.candidates.front();
    r.baselines.push_back({"no-overlap", s.best_no_overlap.priced.iteration_ms});
    if (s.default_mapping) r.baselines.push_back({"default-mapping", s.default_mapping->priced.iteration_ms});
    r.threads = s.threads;
    r.search = std::move(s);
    return r;
  }
};

}  // namespace

const Baseline* PlanResult::baseline(const std::string& name) const {
  for (const Baseline& b : baselines)
    if (b.name == name) return &b;
  return nullptr;
}

const Planner& planner_for(const std::string& family) {
  static const FoldMoePlanner foldmoe;
  static const FsMoePlanner fsmoe;
  static const FlowMoePlanner flowmoe;
  static const FoldingPlanner folding;
  static const JointPlanner joint;
  for (const Planner* p : std::initializer_list<const Planner*>{&foldmoe, &fsmoe, &flowmoe, &folding, &joint})
    if (family == p->family()) return *p;
  throw Error(ErrorKind::Input, fmt::format("no planner for family {}", quoted_for_error(family)), "schedule.family");
}

model::PlanSpec plan_spec(const PlanResult& result) {
  model::PlanSpec spec;
  spec.scenario = result.scenario;
  spec.family = result.family;
  spec.schedule = result.chosen.schedule;
  spec.iteration_ms = result.chosen.iteration_ms;
  spec.baseline_ms = result.baselines.empty() ? 0.0 : result.baselines.front().iteration_ms;
  spec.speedup = spec.baseline_ms > 0 ? spec.baseline_ms / spec.iteration_ms : 0.0;
  if (spec.baseline_ms > 0) check_plausible_speedup(spec.speedup, "plan speedup");
  spec.knobs = result.chosen.knobs;
  return spec;
}

}  // namespace moeplan::plan
