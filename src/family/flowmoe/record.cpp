// FlowMoE's search record: its keys of the plan's JSON (the BO trace), its
// text, its knobs at the edge of the search, the report's Sp curve and --emit knobs.

#include <fmt/format.h>

#include <moeplan/family/flowmoe/family.hpp>
#include <moeplan/plan/overlap_plan.hpp>
#include <moeplan/plan/result_json.hpp>

namespace moeplan::flowmoe {

using io::Json;

void FlowMoeRecord::write_json(Json& doc, const plan::PlanResult& r) const {
  plan::write_overlap_keys(doc, r);
  // The BO trace of the flowmoe schedule (the paper's tuner), whichever schedule won.
  for (const FlowMoeChoice& flow : plan_.schedules) {
    if (flow.best.schedule != "flowmoe") continue;
    Json trace = Json::array();
    for (const TunerSample& sample : flow.tuning.trace) {
      Json point = Json::object();
      point.set("ar_chunk_bytes", sample.chunk_bytes);
      point.set("iteration_ms", sample.iteration_ms);
      trace.push(std::move(point));
    }
    Json bo = Json::object();
    bo.set("schedule", "flowmoe");
    bo.set("degree", flow.best.degree);
    bo.set("best_ar_chunk_bytes", flow.ar_chunk_bytes);
    bo.set("samples", trace);
    doc.set("bo_trace", bo);
  }
  Json list = Json::array();
  for (const FlowMoeChoice& c : plan_.schedules) {
    Json entry = plan::evaluation_to_json(r.scenario, c.best);
    if (c.ar_chunk_bytes > 0) entry.set("ar_chunk_bytes", c.ar_chunk_bytes);
    entry.set("speedup_vs_none", r.baseline("none")->iteration_ms / c.best.iteration_ms);
    entry.set("speedup_vs_tutel", r.baseline("tutel")->iteration_ms / c.best.iteration_ms);
    list.push(std::move(entry));
  }
  doc.set("schedules", list);
}

std::string FlowMoeRecord::text(const plan::PlanResult& r) const {
  const double none_ms = r.baseline("none")->iteration_ms;
  const double tutel_ms = r.baseline("tutel")->iteration_ms;
  const std::int64_t chunk = r.chosen.knobs.ar_chunk_bytes.value_or(0);
  std::string out = fmt::format(
      "plan for {}: {} with R = {}{}: {:.3f} ms per iteration, {:.3f}x over none, {:.3f}x over "
      "tutel\n",
      r.scenario, r.chosen.schedule, *r.chosen.knobs.degree, chunk > 0 ? fmt::format(", Sp = {} bytes", chunk) : "",
      r.chosen.iteration_ms, none_ms / r.chosen.iteration_ms, tutel_ms / r.chosen.iteration_ms);
  out += "  BO samples (Sp bytes -> ms):";
  for (const FlowMoeChoice& flow : plan_.schedules)
    if (flow.best.schedule == "flowmoe")
      for (const TunerSample& sample : flow.tuning.trace)
        out += fmt::format(" {}->{:.2f}", sample.chunk_bytes, sample.iteration_ms);
  out += '\n';
  for (const FlowMoeChoice& c : plan_.schedules)
    out += fmt::format("  {:<11} R = {:<2} {:10.3f} ms  ({:.3f}x vs none)\n", c.best.schedule, c.best.degree,
                       c.best.iteration_ms, none_ms / c.best.iteration_ms);
  return out;
}

std::vector<const plan::Evaluation*> FlowMoeRecord::evaluations() const {
  std::vector<const plan::Evaluation*> out;
  for (const FlowMoeChoice& c : plan_.schedules) out.push_back(&c.best);
  return out;
}

std::vector<plan::EdgeKnob> FlowMoeRecord::edge_knobs(const model::ScenarioSpec& s, const plan::PlanResult& r) const {
  std::vector<plan::EdgeKnob> edges;
  const model::PlanKnobs& k = r.chosen.knobs;
  if (r.chosen.schedule != "none" && !s.schedule.degree && k.degree) {
    const std::vector<std::int64_t>& degrees = flowmoe_degrees();
    if (*k.degree == degrees.back())
      edges.push_back({"degree", *k.degree, degrees.front(), degrees.back(),
                       fmt::format("R is the largest searched ({}): widen the search (set schedule.degree to {} and "
                                   "compare)",
                                   degrees.back(), 2 * degrees.back())});
  }
  if (k.ar_chunk_bytes && !s.schedule.ar_chunk_bytes) {
    const auto [lo, hi] = chunk_search_space(s);
    if (*k.ar_chunk_bytes <= lo || *k.ar_chunk_bytes >= hi)
      edges.push_back({"ar_chunk_bytes", *k.ar_chunk_bytes, lo, hi,
                       *k.ar_chunk_bytes <= lo ? "Sp is at the smallest chunk searched (FlowMoE's 128 KiB floor)"
                                               : "Sp is the whole largest all-reduce: no chunking won"});
  }
  return edges;
}

plan::SearchPicture FlowMoeRecord::picture(const model::ScenarioSpec& scenario, const plan::PlanResult& r,
                                           const plan::Candidate& chosen) const {
  (void)scenario;
  (void)r;
  plan::SearchPicture p;
  // The BO samples of Sp (the plan's bo_trace), when the flowmoe schedule was searched.
  for (const FlowMoeChoice& flow : plan_.schedules)
    if (flow.best.schedule == "flowmoe") p.chart = "sp-curve";
  p.bars = plan::evaluation_bars(*this, chosen.schedule);
  return p;
}

std::string FlowMoeRecord::emit(const plan::PlanResult& r, const model::ScenarioSpec& scenario) const {
  (void)scenario;
  const model::PlanKnobs& k = r.chosen.knobs;
  std::string out = plan::knobs_emit_header(r);
  // FlowMoE's pipelining degree R and all-reduce chunk size Sp (its code takes Sp in bytes).
  out += fmt::format("R={}\n", *k.degree);
  if (k.ar_chunk_bytes) out += fmt::format("Sp_bytes={}\n", *k.ar_chunk_bytes);
  return out;
}

}  // namespace moeplan::flowmoe
