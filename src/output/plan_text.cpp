#include <moeplan/output/plan_report.hpp>

#include <fmt/format.h>

#include <moeplan/plan/search_record.hpp>

namespace moeplan::output {
namespace {

// Why the plan won (issue 17 item 5), for a person to check.
std::string why_text(const plan::PlanResult& r, const plan::Explanation& e) {
  std::string out = "  why:\n";
  const double best = r.chosen.iteration_ms;
  if (r.candidates.size() > 1) {
    const plan::Candidate& second = r.candidates[1];
    out += fmt::format("    runner-up {} ({}) {:.3f} ms, {:.2f}% slower", second.schedule, plan::knobs_text(second.knobs),
                       second.iteration_ms, 100 * (second.iteration_ms - best) / best);
    std::size_t ties = 0;
    for (std::size_t i = 1; i < r.candidates.size(); ++i) ties += r.candidates[i].iteration_ms <= best * (1 + kTieFraction);
    out += ties > 0 ? fmt::format("; {} candidate(s) within {:.0f}%: a tie for this model\n", ties, 100 * kTieFraction)
                    : "\n";
  }
  for (const plan::EdgeKnob& k : e.edges)
    out += fmt::format("    edge: {} = {} (searched {}..{}): {}\n", k.knob, k.value, k.searched_min, k.searched_max,
                       k.advice);
  out += fmt::format("    binding constraint: {} ({})\n", e.binding.name, e.binding.detail);
  if (!e.savings.empty()) {
    out += fmt::format("    change against {} (negative: saved):", e.savings_baseline);
    for (const plan::Saving& t : e.savings) out += fmt::format(" {} {:+.3f}", t.term, t.chosen_ms - t.baseline_ms);
    out += " ms\n";
  }
  if (!e.sensitivity.empty()) {
    std::string flips;
    for (const plan::Perturbation& p : e.sensitivity)
      if (p.winner != 0)
        flips += fmt::format("{}{} x{:.1f} -> {} ({})", flips.empty() ? "" : ", ", p.what, p.scale,
                             r.candidates[p.winner].schedule, plan::knobs_text(r.candidates[p.winner].knobs));
    out += e.fragile ? fmt::format("    FRAGILE: the lead changes within +-20%: {}\n", flips)
                     : fmt::format("    robust: the best of the top {} stays first with each bandwidth and the GEMM "
                                   "speed at x0.8 and x1.2\n",
                                   e.sensitivity_candidates);
  }
  return out;
}

}  // namespace

std::string plan_to_text(const plan::PlanResult& r, const plan::Explanation* e) {
  return r.search->text(r) + (e != nullptr ? why_text(r, *e) : std::string());
}

}  // namespace moeplan::output
