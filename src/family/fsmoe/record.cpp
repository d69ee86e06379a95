// FSMoE's search record: its keys of the plan's JSON (closed forms, gradient
// partition), its text, the report's gradient-partition chart and --emit knobs.

#include <fmt/format.h>

#include <moeplan/family/fsmoe/family.hpp>
#include <moeplan/io/plan_writer.hpp>
#include <moeplan/plan/overlap_plan.hpp>

namespace moeplan::fsmoe {

using io::Json;

void FsMoeRecord::write_json(Json& doc, const plan::PlanResult& r) const {
  plan::write_overlap_keys(doc, r);
  Json knobs = io::knobs_to_json(r.chosen.knobs);
  Json per_layer = Json::array();
  for (std::int64_t d : plan_.partition.degree_backward) per_layer.push(d);
  knobs.set("degree_backward_per_layer", per_layer);
  knobs.set("tutel_degree", plan_.tutel_degree);
  knobs.set("grad_tail_bytes", plan_.partition.tail_bytes);
  doc.set("knobs", knobs);
  Json closed = Json::object();
  closed.set("case_forward", to_string(plan_.degrees.forward.which));
  closed.set("t_moe_forward_ms", plan_.degrees.forward.t_moe_ms);
  closed.set("case_backward", to_string(plan_.degrees.backward.which));
  closed.set("t_moe_backward_ms", plan_.degrees.backward.t_moe_ms);
  closed.set("overlap_gap_ms", plan_.overlap_gap_ms);
  doc.set("closed_form", closed);
  Json all = Json::array();
  for (const plan::Evaluation& e : plan_.schedules) all.push(plan::schedule_entry(r, e));
  doc.set("schedules", all);
}

std::string FsMoeRecord::text(const plan::PlanResult& r) const {
  const FsMoePlan& p = plan_;
  const double none_ms = r.baseline("none")->iteration_ms;
  const double tutel_ms = r.baseline("tutel")->iteration_ms;
  std::string out = fmt::format("plan for {}: {} ({:.3f} ms per iteration), {:.3f}x over none, {:.3f}x over tutel\n",
                                r.scenario, r.chosen.schedule, r.chosen.iteration_ms,
                                none_ms / r.chosen.iteration_ms, tutel_ms / r.chosen.iteration_ms);
  out += fmt::format(
      "  FSMoE degrees: forward r = {} ({}, {:.3f} ms per MoE layer), backward r = {} ({}, "
      "{:.3f} ms); Tutel's adaptive r = {}\n",
      p.degrees.forward.r, to_string(p.degrees.forward.which), p.degrees.forward.t_moe_ms, p.degrees.backward.r,
      to_string(p.degrees.backward.which), p.degrees.backward.t_moe_ms, p.tutel_degree);
  // The partition's totals, as the closed forms chose them (whichever schedule won).
  double hidden = 0;
  for (std::size_t l = 0; l < p.partition.during_moe_bytes.size(); ++l)
    hidden += static_cast<double>(
        std::llround(p.partition.during_moe_bytes[l] + p.partition.during_dense_bytes[l]));
  out += fmt::format(
      "  gradient partition: {:.1f} MB overlapped with layers, {:.1f} MB after backward; "
      "overlap gap t_olp,moe {:.3f} ms\n",
      hidden / 1e6, p.partition.tail_bytes / 1e6, p.overlap_gap_ms);
  for (const plan::Evaluation& e : p.schedules)
    out += fmt::format("  {:<14} {:10.3f} ms  ({:.3f}x vs none, {:.3f}x vs tutel)\n", e.schedule, e.iteration_ms,
                       none_ms / e.iteration_ms, tutel_ms / e.iteration_ms);
  return out;
}

std::vector<const plan::Evaluation*> FsMoeRecord::evaluations() const {
  std::vector<const plan::Evaluation*> out;
  for (const plan::Evaluation& e : plan_.schedules) out.push_back(&e);
  return out;
}

std::string FsMoeRecord::knobs_words(const model::PlanKnobs& k) const {
  std::string text = plan::knobs_text(k);
  if (k.degree_forward && k.degree_backward)
    text += fmt::format("{}r {} forward, {} backward", text.empty() ? "" : " ", *k.degree_forward, *k.degree_backward);
  return text;
}

plan::SearchPicture FsMoeRecord::picture(const model::ScenarioSpec& scenario, const plan::PlanResult& r,
                                         const plan::Candidate& chosen) const {
  (void)scenario;
  (void)r;
  plan::SearchPicture p;
  p.chart = "gradient-partition";  // section 5's partition per generalized layer (the plan's knobs)
  p.bars = plan::evaluation_bars(*this, chosen.schedule);
  return p;
}

std::string FsMoeRecord::emit(const plan::PlanResult& r, const model::ScenarioSpec& scenario) const {
  (void)scenario;
  const model::PlanKnobs& k = r.chosen.knobs;
  std::string out = plan::knobs_emit_header(r);
  std::string list;
  for (std::int64_t x : k.grad_partition_bytes) list += fmt::format("{}{}", list.empty() ? "" : ",", x);
  // FSMoE's pipeline degree r per phase and section 5's gradient partition (bytes per layer, model order).
  out += fmt::format("r_forward={}\nr_backward={}\n", *k.degree_forward, *k.degree_backward);
  out += fmt::format("gradient_partition_bytes={}\n", list);
  return out;
}

}  // namespace moeplan::fsmoe
