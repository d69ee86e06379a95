#include <moeplan/plan/explain.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/plan/candidate_run.hpp>
#include <moeplan/plan/evaluation.hpp>

namespace moeplan::plan {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::vector<EdgeKnob> edge_knobs(const ScenarioRun& run, const PlanResult& r) {
  std::vector<EdgeKnob> edges;
  const model::ScenarioSpec& s = run.spec();
  const model::PlanKnobs& k = r.chosen.knobs;
  if (r.family == "foldmoe" && r.chosen.schedule != "none" && k.degree && !s.schedule.degree &&
      s.schedule.slicing_tokens.empty()) {
    // plan_foldmoe searches d in 1..min(32, a rank's tokens per sequence).
    const std::int64_t tokens = s.workload.seq_len / (s.parallel.sequence_parallel ? s.parallel.tp : 1);
    const std::int64_t limit = std::max<std::int64_t>(1, std::min<std::int64_t>(32, tokens));
    if (*k.degree == limit && limit > 1)
      edges.push_back({"degree", *k.degree, 1, limit,
                       "d is at the top of the searched range (32 is Tutel's limit): a runtime that allows a larger "
                       "d may gain more"});
  }
  if (r.family == "flowmoe" && r.chosen.schedule != "none" && !s.schedule.degree && k.degree) {
    const std::vector<std::int64_t>& degrees = flowmoe_degrees();
    if (*k.degree == degrees.back())
      edges.push_back({"degree", *k.degree, degrees.front(), degrees.back(),
                       fmt::format("R is the largest searched ({}): widen the search (set schedule.degree to {} and "
                                   "compare)",
                                   degrees.back(), 2 * degrees.back())});
  }
  if (r.family == "flowmoe" && k.ar_chunk_bytes && !s.schedule.ar_chunk_bytes) {
    const auto [lo, hi] = chunk_search_space(s);
    if (*k.ar_chunk_bytes <= lo || *k.ar_chunk_bytes >= hi)
      edges.push_back({"ar_chunk_bytes", *k.ar_chunk_bytes, lo, hi,
                       *k.ar_chunk_bytes <= lo ? "Sp is at the smallest chunk searched (FlowMoE's 128 KiB floor)"
                                               : "Sp is the whole largest all-reduce: no chunking won"});
  }
  return edges;
}

BindingConstraint binding_constraint(const ScenarioRun& run, const PlanResult& r) {
  if (const auto* joint = std::get_if<JointSearch>(&r.search)) {
    // Memory binds when a mapping that does not fit beats the plan even without overlap.
    const FoldingResult& f = *joint->fastest;
    if (!f.fits && f.iteration_ms < r.chosen.iteration_ms)
      return {"memory",
              fmt::format("a mapping that does not fit (tp {} cp {} pp {} vpp {} ep {} etp {} mb {}: {:.1f} ms with "
                          "no overlap) needs {:.1f} GiB per GPU, more than the {:.1f} GiB usable (10% reserve)",
                          f.config.tp, f.config.cp, f.config.pp, f.config.vpp, f.config.ep, f.config.etp,
                          f.config.micro_batch, f.iteration_ms, f.memory_bytes_per_gpu / kGiB,
                          run.spec().cluster.gpu.memory_bytes * 0.9 / kGiB)};
    return {"none", "no mapping that does not fit is faster than the plan, even with no overlap"};
  }
  if (const auto* search = std::get_if<FoldingSearch>(&r.search)) {
    // The fastest mapping of all, fitting or not: if it does not fit, memory bound the choice.
    const FoldingResult* fastest = nullptr;
    for (const FoldingResult& f : search->folded)
      if (fastest == nullptr || f.iteration_ms < fastest->iteration_ms) fastest = &f;
    if (fastest != nullptr && !fastest->fits)
      return {"memory",
              fmt::format("the fastest mapping (tp {} cp {} pp {} vpp {} ep {} etp {} mb {}: {:.1f} ms) needs {:.1f} "
                          "GiB per GPU, more than the {:.1f} GiB usable (10% reserve)",
                          fastest->config.tp, fastest->config.cp, fastest->config.pp, fastest->config.vpp,
                          fastest->config.ep, fastest->config.etp, fastest->config.micro_batch, fastest->iteration_ms,
                          fastest->memory_bytes_per_gpu / kGiB, run.spec().cluster.gpu.memory_bytes * 0.9 / kGiB)};
    return {"none", "the fastest mapping searched fits in memory"};
  }
  if (!r.chosen.fits)
    return {"memory", fmt::format("the scenario's mapping needs {:.1f} GiB per GPU and does not fit; the schedules "
                                  "share it, so the plan is for a run that would not fit",
                                  r.chosen.memory_bytes_per_gpu / kGiB)};
  return {"none", "the schedules share the scenario's mapping, which fits in memory"};
}

const Evaluation* evaluation_of(const PlanResult& r, const std::string& schedule) {
  if (const auto* p = std::get_if<FoldMoePlan>(&r.search))
    for (const ScheduleChoice& c : p->schedules)
      if (c.best.schedule == schedule) return &c.best;
  if (const auto* p = std::get_if<FsMoePlan>(&r.search))
    for (const Evaluation& e : p->schedules)
      if (e.schedule == schedule) return &e;
  if (const auto* p = std::get_if<FlowMoePlan>(&r.search))
    for (const FlowMoeChoice& c : p->schedules)
      if (c.best.schedule == schedule) return &c.best;
  return nullptr;
}

void savings(const PlanResult& r, Explanation& out) {
  if (const auto* joint = std::get_if<JointSearch>(&r.search)) {
    // Against the best mapping with no overlap: its stage's terms, and the
    // communication left exposed once the schedule has hidden its part.
    const FoldingBreakdown& b = joint->best_no_overlap.priced.breakdown;
    const FoldingBreakdown& c = joint->best().priced.breakdown;
    out.savings_baseline = "no-overlap";
    out.savings = {{"attention_ms", b.attention_ms, c.attention_ms},
                   {"moe_compute_ms", b.moe_compute_ms, c.moe_compute_ms},
                   {"exposed_comm_ms", b.a2a_ms + b.agrs_ms + b.dp_ms,
                    c.a2a_ms + c.agrs_ms + c.dp_ms - joint->best().hidden_ms()},
                   {"pp_bubble_ms", b.pp_bubble_ms, c.pp_bubble_ms}};
    return;
  }
  if (const auto* search = std::get_if<FoldingSearch>(&r.search)) {
    if (r.baseline("coupled") == nullptr) return;
    const FoldingBreakdown& b = search->coupled.front().breakdown;
    const FoldingBreakdown& c = search->folded.front().breakdown;
    out.savings_baseline = "coupled";
    out.savings = {{"attention_ms", b.attention_ms, c.attention_ms},   {"moe_compute_ms", b.moe_compute_ms, c.moe_compute_ms},
                   {"a2a_ms", b.a2a_ms, c.a2a_ms},                     {"agrs_ms", b.agrs_ms, c.agrs_ms},
                   {"dp_ms", b.dp_ms, c.dp_ms},                        {"pp_bubble_ms", b.pp_bubble_ms, c.pp_bubble_ms}};
    return;
  }
  const Evaluation* base = evaluation_of(r, "none");
  const Evaluation* chosen = evaluation_of(r, r.chosen.schedule);
  if (base == nullptr || chosen == nullptr) return;
  out.savings_baseline = "none";
  out.savings = {{"compute_ms", base->compute_ms, chosen->compute_ms},
                 {"exposed_comm_ms", base->exposed_comm_ms, chosen->exposed_comm_ms},
                 {"a2a_critical_ms", base->a2a_critical_ms, chosen->a2a_critical_ms},
                 {"bubble_ms", base->bubble_ms, chosen->bubble_ms}};
}

}  // namespace

double evaluate_candidate(const ScenarioRun& run, const PlanResult& r, const Candidate& c) {
  const model::PlanKnobs& k = c.knobs;
  if (r.family == "joint") {
    // The candidate's mapping and schedule at its degree, probed again on this cost model.
    OverlapSchedule overlap{"none", "none", 0};
    if (const std::size_t slash = c.schedule.find('/'); slash != std::string::npos)
      overlap = {c.schedule.substr(0, slash), c.schedule.substr(slash + 1), k.degree.value_or(0)};
    return price_joint(run.spec(), run.costs(), FoldingConfig::from(*k.parallelism, *k.micro_batch_size), overlap)
        .priced.iteration_ms;
  }
  return run_candidate(run, r, c).timeline.makespan_ms;
}

model::ScenarioSpec perturbed(const model::ScenarioSpec& scenario, const std::string& what, double scale) {
  model::ScenarioSpec s = scenario;
  if (!s.profile) return s;
  for (model::LinearCostSpec& line : s.profile->costs) {
    const bool gemm = line.op == model::OpClass::Gemm;
    const bool comm = !gemm && line.op != model::OpClass::Attention;
    const bool hit = (what == "gemm_speed" && gemm) ||
                     (what == "inter_bandwidth" && comm && line.link == model::LinkClass::Inter) ||
                     (what == "intra_bandwidth" && comm && line.link == model::LinkClass::Intra);
    if (hit) line.beta_ms_per_unit /= scale;
  }
  // With a GEMM shape model, expert GEMMs are priced by the block, not the
  // line: its compute rate moves by the same factor. The rate is peak / units
  // x efficiency, so scaling the peak is scaling the efficiency without its
  // (0, 1] cap (a fitted efficiency near 1 could not move up 20%). The memory
  // side is not GEMM speed and stays.
  if (what == "gemm_speed" && s.profile->gemm_shape) s.profile->gemm_shape->peak_flops_per_s *= scale;
  return s;
}

Explanation explain(const ScenarioRun& run, const PlanResult& r) {
  Explanation out;
  out.edges = edge_knobs(run, r);
  out.binding = binding_constraint(run, r);
  savings(r, out);
  out.sensitivity_candidates = std::min(kSensitivityCandidates, r.candidates.size());
  if (out.sensitivity_candidates < 2) return out;
  for (const char* what : {"inter_bandwidth", "intra_bandwidth", "gemm_speed"})
    for (double scale : kSensitivityScales) {
      const ScenarioRun moved(perturbed(run.spec(), what, scale));
      Perturbation p{what, scale};
      for (std::size_t i = 0; i < out.sensitivity_candidates; ++i) {
        const double ms = evaluate_candidate(moved, r, r.candidates[i]);
        if (i == 0) p.chosen_ms = ms;
        if (i == 0 || ms < p.winner_ms) {
          p.winner = i;
          p.winner_ms = ms;
        }
      }
      out.fragile = out.fragile || p.winner != 0;
      out.sensitivity.push_back(p);
    }
  return out;
}

}  // namespace moeplan::plan
