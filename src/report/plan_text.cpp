#include <string>

#include <fmt/format.h>

#include <moeplan/report/plan_report.hpp>

namespace moeplan::report {
namespace {

std::string foldmoe_text(const plan::PlanResult& r, const plan::FoldMoePlan& p) {
  const double none_ms = r.baseline("none")->iteration_ms;
  const double tutel_ms = r.baseline("tutel")->iteration_ms;
  std::string out = fmt::format("plan for {}: {} with d = {}: {:.3f} ms per iteration\n", r.scenario,
                                r.chosen.schedule, *r.chosen.knobs.degree, r.chosen.iteration_ms);
  out += fmt::format("  speed-up {:.3f}x over none ({:.3f} ms), {:.3f}x over tutel ({:.3f} ms)\n",
                     none_ms / r.chosen.iteration_ms, none_ms, tutel_ms / r.chosen.iteration_ms, tutel_ms);
  if (!r.chosen.knobs.slicing_tokens.empty()) {
    std::string slices;
    for (std::int64_t t : r.chosen.knobs.slicing_tokens) slices += fmt::format("{}{}", slices.empty() ? "" : " ", t);
    out += "  attention slices (tokens): " + slices + '\n';
  }
  for (const plan::ScheduleChoice& c : p.schedules)
    if (c.best.schedule == r.chosen.schedule)
      out += fmt::format("  AlltoAll on the critical path {:.3f} ms of {:.3f} ms\n", c.best.a2a_critical_ms,
                         c.best.a2a_total_ms);
  for (const plan::ScheduleChoice& c : p.schedules)
    out += fmt::format("  {:<14} best d = {:<3} {:9.3f} ms  ({:.3f}x vs none)\n", c.best.schedule, c.best.degree,
                       c.best.iteration_ms, none_ms / c.best.iteration_ms);
  return out;
}

std::string fsmoe_text(const plan::PlanResult& r, const plan::FsMoePlan& p) {
  const double none_ms = r.baseline("none")->iteration_ms;
  const double tutel_ms = r.baseline("tutel")->iteration_ms;
  std::string out = fmt::format("plan for {}: {} ({:.3f} ms per iteration), {:.3f}x over none, {:.3f}x over tutel\n",
                                r.scenario, r.chosen.schedule, r.chosen.iteration_ms,
                                none_ms / r.chosen.iteration_ms, tutel_ms / r.chosen.iteration_ms);
  out += fmt::format(
      "  FSMoE degrees: forward r = {} ({}, {:.3f} ms per MoE layer), backward r = {} ({}, "
      "{:.3f} ms); Tutel's adaptive r = {}\n",
      p.degrees.forward.r, plan::to_string(p.degrees.forward.which), p.degrees.forward.t_moe_ms, p.degrees.backward.r,
      plan::to_string(p.degrees.backward.which), p.degrees.backward.t_moe_ms, p.tutel_degree);
  double hidden = 0;
  for (std::int64_t b : r.chosen.knobs.grad_partition_bytes) hidden += static_cast<double>(b);
  out += fmt::format(
      "  gradient partition: {:.1f} MB overlapped with layers, {:.1f} MB after backward; "
      "overlap gap t_olp,moe {:.3f} ms\n",
      hidden / 1e6, p.partition.tail_bytes / 1e6, p.overlap_gap_ms);
  for (const plan::Evaluation& e : p.schedules)
    out += fmt::format("  {:<14} {:10.3f} ms  ({:.3f}x vs none, {:.3f}x vs tutel)\n", e.schedule, e.iteration_ms,
                       none_ms / e.iteration_ms, tutel_ms / e.iteration_ms);
  return out;
}

std::string flowmoe_text(const plan::PlanResult& r, const plan::FlowMoePlan& p) {
  const double none_ms = r.baseline("none")->iteration_ms;
  const double tutel_ms = r.baseline("tutel")->iteration_ms;
  const std::int64_t chunk = r.chosen.knobs.ar_chunk_bytes.value_or(0);
  std::string out = fmt::format(
      "plan for {}: {} with R = {}{}: {:.3f} ms per iteration, {:.3f}x over none, {:.3f}x over "
      "tutel\n",
      r.scenario, r.chosen.schedule, *r.chosen.knobs.degree, chunk > 0 ? fmt::format(", Sp = {} bytes", chunk) : "",
      r.chosen.iteration_ms, none_ms / r.chosen.iteration_ms, tutel_ms / r.chosen.iteration_ms);
  out += "  BO samples (Sp bytes -> ms):";
  for (const plan::FlowMoeChoice& flow : p.schedules)
    if (flow.best.schedule == "flowmoe")
      for (const plan::TunerSample& sample : flow.tuning.trace)
        out += fmt::format(" {}->{:.2f}", sample.chunk_bytes, sample.iteration_ms);
  out += '\n';
  for (const plan::FlowMoeChoice& c : p.schedules)
    out += fmt::format("  {:<11} R = {:<2} {:10.3f} ms  ({:.3f}x vs none)\n", c.best.schedule, c.best.degree,
                       c.best.iteration_ms, none_ms / c.best.iteration_ms);
  return out;
}

std::string folding_line(const plan::FoldingResult& f) {
  return fmt::format(
      "tp {} cp {} pp {} vpp {} ep {} etp {} (dp {} edp {}) mb {}: {:.1f} ms, MFU {:.1f}%, {:.1f} GiB "
      "per GPU",
      f.config.tp, f.config.cp, f.config.pp, f.config.vpp, f.config.ep, f.config.etp, f.config.dp, f.config.edp,
      f.config.micro_batch, f.iteration_ms, 100 * f.mfu, f.memory_bytes_per_gpu / (1024.0 * 1024 * 1024));
}

std::string folding_text(const plan::PlanResult& r, const plan::FoldingSearch& s) {
  std::string out = "plan for " + r.scenario + '\n';
  out += "  folded:  " + folding_line(s.folded.front()) + '\n';
  out += r.baseline("coupled") != nullptr ? "  coupled: " + folding_line(s.coupled.front()) + '\n'
                                          : std::string("  coupled: no mapping fits\n");
  return out;
}

std::string joint_line(const plan::JointResult& j) {
  std::string overlap = "no overlap";
  if (j.overlap.family == "fsmoe")
    overlap = fmt::format("{} (r {} forward, {} backward)", j.label(), j.degree_forward, j.degree_backward);
  else if (j.overlap.family != "none")
    overlap = fmt::format("{} ({} {})", j.label(), j.overlap.family == "flowmoe" ? "R" : "d", j.overlap.degree);
  return folding_line(j.priced) + ", " + overlap;
}

std::string joint_text(const plan::PlanResult& r, const plan::JointSearch& s) {
  const double best = s.best().priced.iteration_ms;
  std::string out = "joint plan for " + r.scenario + '\n';
  out += "  joint:           " + joint_line(s.best()) + '\n';
  out += fmt::format("  no overlap:      {} ({:.3f}x)\n", joint_line(s.best_no_overlap),
                     s.best_no_overlap.priced.iteration_ms / best);
  if (s.default_mapping)
    out += fmt::format("  default mapping: {} ({:.3f}x)\n", joint_line(*s.default_mapping),
                       s.default_mapping->priced.iteration_ms / best);
  out += fmt::format("  {} mappings, {} fit, {} evaluated with every schedule ({} layer shapes probed)\n", s.mappings,
                     s.fitting, s.evaluated, s.shapes_probed);
  return out;
}
}  // namespace

std::string knobs_text(const model::PlanKnobs& k) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : " ") + part; };
  if (k.degree) add(fmt::format("d {}", *k.degree));
  if (k.ar_chunk_bytes) add(fmt::format("Sp {}", *k.ar_chunk_bytes));
  if (k.parallelism)
    add(fmt::format("tp {} cp {} pp {} vpp {} ep {} etp {}", k.parallelism->tp, k.parallelism->cp, k.parallelism->pp,
                    k.parallelism->vpp, k.parallelism->ep, k.parallelism->etp));
  if (k.micro_batch_size) add(fmt::format("mb {}", *k.micro_batch_size));
  return out;
}

namespace {

// Why the plan won (issue 17 item 5), for a person to check.
std::string why_text(const plan::PlanResult& r, const plan::Explanation& e) {
  std::string out = "  why:\n";
  const double best = r.chosen.iteration_ms;
  if (r.candidates.size() > 1) {
    const plan::Candidate& second = r.candidates[1];
    out += fmt::format("    runner-up {} ({}) {:.3f} ms, {:.2f}% slower", second.schedule, knobs_text(second.knobs),
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
                             r.candidates[p.winner].schedule, knobs_text(r.candidates[p.winner].knobs));
    out += e.fragile ? fmt::format("    FRAGILE: the lead changes within +-20%: {}\n", flips)
                     : fmt::format("    robust: the best of the top {} stays first with each bandwidth and the GEMM "
                                   "speed at x0.8 and x1.2\n",
                                   e.sensitivity_candidates);
  }
  return out;
}

}  // namespace

std::string plan_to_text(const plan::PlanResult& r, const plan::Explanation* e) {
  return std::visit(
      [&](const auto& search) -> std::string {
        using T = std::decay_t<decltype(search)>;
        if constexpr (std::is_same_v<T, plan::FoldMoePlan>) return foldmoe_text(r, search);
        if constexpr (std::is_same_v<T, plan::FsMoePlan>) return fsmoe_text(r, search);
        if constexpr (std::is_same_v<T, plan::FlowMoePlan>) return flowmoe_text(r, search);
        if constexpr (std::is_same_v<T, plan::FoldingSearch>) return folding_text(r, search);
        if constexpr (std::is_same_v<T, plan::JointSearch>) return joint_text(r, search);
      },
      r.search) +
         (e != nullptr ? why_text(r, *e) : std::string());
}

}  // namespace moeplan::report
