// FoldMoE's search record: its keys of the plan's JSON, its text, its knobs
// at the edge of the search, the report's degree curve and --emit knobs.

#include <algorithm>

#include <fmt/format.h>

#include <moeplan/family/foldmoe/family.hpp>
#include <moeplan/io/plan_writer.hpp>
#include <moeplan/plan/overlap_plan.hpp>

namespace moeplan::foldmoe {

using io::Json;

void FoldMoeRecord::write_json(Json& doc, const plan::PlanResult& r) const {
  plan::write_overlap_keys(doc, r);
  Json knobs = io::knobs_to_json(r.chosen.knobs);
  knobs.set("slicing_scheme", r.chosen.schedule == "1a1m-uniform"    ? "time-uniform"
                              : r.chosen.knobs.slicing_tokens.empty() ? "none"
                                                                      : "token-uniform");
  doc.set("knobs", knobs);
  for (const ScheduleChoice& c : plan_.schedules)
    if (c.best.schedule == r.chosen.schedule) {
      doc.set("a2a_critical_ms", c.best.a2a_critical_ms);
      doc.set("a2a_total_ms", c.best.a2a_total_ms);
    }
  Json all = Json::array();
  for (const ScheduleChoice& c : plan_.schedules) {
    Json entry = plan::schedule_entry(r, c.best);
    Json tried = Json::array();
    for (const auto& [d, ms] : c.tried) tried.push(Json(Json::Array{Json(d), Json(ms)}));
    entry.set("degrees_tried", tried);
    all.push(std::move(entry));
  }
  doc.set("schedules", all);
}

std::string FoldMoeRecord::text(const plan::PlanResult& r) const {
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
  for (const ScheduleChoice& c : plan_.schedules)
    if (c.best.schedule == r.chosen.schedule)
      out += fmt::format("  AlltoAll on the critical path {:.3f} ms of {:.3f} ms\n", c.best.a2a_critical_ms,
                         c.best.a2a_total_ms);
  for (const ScheduleChoice& c : plan_.schedules)
    out += fmt::format("  {:<14} best d = {:<3} {:9.3f} ms  ({:.3f}x vs none)\n", c.best.schedule, c.best.degree,
                       c.best.iteration_ms, none_ms / c.best.iteration_ms);
  return out;
}

std::vector<const plan::Evaluation*> FoldMoeRecord::evaluations() const {
  std::vector<const plan::Evaluation*> out;
  for (const ScheduleChoice& c : plan_.schedules) out.push_back(&c.best);
  return out;
}

std::vector<plan::EdgeKnob> FoldMoeRecord::edge_knobs(const model::ScenarioSpec& s, const plan::PlanResult& r) const {
  std::vector<plan::EdgeKnob> edges;
  const model::PlanKnobs& k = r.chosen.knobs;
  if (r.chosen.schedule != "none" && k.degree && !s.schedule.degree && s.schedule.slicing_tokens.empty()) {
    // plan_foldmoe searches d in 1..min(32, a rank's tokens per sequence).
    const std::int64_t tokens = s.workload.seq_len / (s.parallel.sequence_parallel ? s.parallel.tp : 1);
    const std::int64_t limit = std::max<std::int64_t>(1, std::min<std::int64_t>(32, tokens));
    if (*k.degree == limit && limit > 1)
      edges.push_back({"degree", *k.degree, 1, limit,
                       "d is at the top of the searched range (32 is Tutel's limit): a runtime that allows a larger "
                       "d may gain more"});
  }
  return edges;
}

plan::SearchPicture FoldMoeRecord::picture(const model::ScenarioSpec& scenario, const plan::PlanResult& r,
                                           const plan::Candidate& chosen) const {
  (void)scenario;
  (void)r;
  plan::SearchPicture p;
  p.chart = "degree-curve";  // iteration against d, each schedule at every degree searched
  p.bars = plan::evaluation_bars(*this, chosen.schedule);
  return p;
}

std::string FoldMoeRecord::emit(const plan::PlanResult& r, const model::ScenarioSpec& scenario) const {
  (void)scenario;
  const model::PlanKnobs& k = r.chosen.knobs;
  std::string out = plan::knobs_emit_header(r);
  // Tutel's moe_layer argument for the overlap degree d (FoldMoE reuses it).
  out += fmt::format("a2a_ffn_overlap_degree={}\n", *k.degree);
  if (!k.slicing_tokens.empty()) {
    std::string list;
    for (std::int64_t x : k.slicing_tokens) list += fmt::format("{}{}", list.empty() ? "" : ",", x);
    out += fmt::format("attention_slice_tokens={}\n", list);
  }
  return out;
}

}  // namespace moeplan::foldmoe
