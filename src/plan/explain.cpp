#include <moeplan/plan/explain.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <moeplan/plan/search_record.hpp>

namespace moeplan::plan {

double evaluate_candidate(const ScenarioRun& run, const PlanResult& r, const Candidate& c) {
  return r.search->evaluate_candidate(run, r, c);
}

model::ScenarioSpec perturbed(const model::ScenarioSpec& scenario, const std::string& what, double scale) {
  model::ScenarioSpec s = scenario;
  if (!s.profile) return s;
  for (model::LinearCostSpec& line : s.profile->costs) {
    const bool gemm = line.op == model::OpClass::Gemm || line.op == model::OpClass::GemmFp8;
    const bool comm = !model::is_compute_op(line.op);
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
  const SearchRecord& record = *r.search;
  out.edges = record.edge_knobs(run.spec(), r);
  out.binding = record.binding_constraint(run.spec(), r);
  Savings saved = record.savings(r);
  out.savings_baseline = std::move(saved.baseline);
  out.savings = std::move(saved.terms);
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
