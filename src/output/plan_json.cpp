#include <moeplan/output/plan_report.hpp>

#include <moeplan/io/plan_writer.hpp>
#include <moeplan/plan/search_record.hpp>

namespace moeplan::output {
namespace {

using io::Json;

Json candidate_to_json(const plan::Candidate& c, double best_ms) {
  Json j = Json::object();
  j.set("schedule", c.schedule);
  j.set("knobs", io::knobs_to_json(c.knobs));
  j.set("iteration_ms", c.iteration_ms);
  // How much slower than the chosen one, in percent of the chosen one's time.
  j.set("gap_pct", 100.0 * (c.iteration_ms - best_ms) / best_ms);
  j.set("memory_bytes_per_gpu", c.memory_bytes_per_gpu);
  j.set("fits", c.fits);
  if (c.mfu) j.set("mfu", *c.mfu);
  return j;
}

Json chosen_to_json(const plan::PlanResult& r) {
  Json j = Json::object();
  j.set("schedule", r.chosen.schedule);
  j.set("knobs", io::knobs_to_json(r.chosen.knobs));
  j.set("iteration_ms", r.chosen.iteration_ms);
  j.set("tokens_per_s", r.tokens_per_s());
  j.set("memory_bytes_per_gpu", r.chosen.memory_bytes_per_gpu);
  j.set("fits", r.chosen.fits);
  if (r.chosen.mfu) j.set("mfu", *r.chosen.mfu);
  return j;
}

// What a person checks first: how far the runner-up is, and which candidates
// are too close to call (within kTieFraction of the best).
Json explanation_to_json(const plan::PlanResult& r, const plan::Explanation* e) {
  Json j = Json::object();
  const double best = r.chosen.iteration_ms;
  if (r.candidates.size() > 1) {
    const plan::Candidate& second = r.candidates[1];
    j.set("runner_up", second.schedule);
    j.set("runner_up_knobs", io::knobs_to_json(second.knobs));
    j.set("margin_pct", 100.0 * (second.iteration_ms - best) / best);
  } else {
    j.set("runner_up", nullptr);
  }
  Json ties = Json::array();
  for (std::size_t i = 1; i < r.candidates.size(); ++i)
    if (r.candidates[i].iteration_ms <= best * (1 + kTieFraction)) {
      Json t = Json::object();
      t.set("schedule", r.candidates[i].schedule);
      t.set("knobs", io::knobs_to_json(r.candidates[i].knobs));
      t.set("gap_pct", 100.0 * (r.candidates[i].iteration_ms - best) / best);
      ties.push(std::move(t));
    }
  j.set("ties_within_pct", 100.0 * kTieFraction);
  j.set("ties", ties);
  Json notes = Json::array();
  for (const std::string& n : r.notes) notes.push(n);
  j.set("notes", notes);
  if (e == nullptr) return j;
  Json edges = Json::array();
  for (const plan::EdgeKnob& k : e->edges) {
    Json x = Json::object();
    x.set("knob", k.knob);
    x.set("value", k.value);
    x.set("searched", Json(Json::Array{Json(k.searched_min), Json(k.searched_max)}));
    x.set("advice", k.advice);
    edges.push(std::move(x));
  }
  j.set("edge_knobs", edges);
  Json binding = Json::object();
  binding.set("name", e->binding.name);
  binding.set("detail", e->binding.detail);
  j.set("binding_constraint", binding);
  Json savings = Json::object();
  savings.set("baseline", e->savings_baseline.empty() ? Json(nullptr) : Json(e->savings_baseline));
  Json terms = Json::array();
  for (const plan::Saving& t : e->savings) {
    Json x = Json::object();
    x.set("term", t.term);
    x.set("baseline_ms", t.baseline_ms);
    x.set("chosen_ms", t.chosen_ms);
    x.set("saved_ms", t.baseline_ms - t.chosen_ms);
    terms.push(std::move(x));
  }
  savings.set("terms", terms);
  j.set("savings", savings);
  Json sens = Json::object();
  sens.set("candidates", static_cast<std::int64_t>(e->sensitivity_candidates));
  Json runs = Json::array();
  for (const plan::Perturbation& p : e->sensitivity) {
    Json x = Json::object();
    x.set("what", p.what);
    x.set("scale", p.scale);
    x.set("winner", r.candidates[p.winner].schedule);
    x.set("winner_knobs", io::knobs_to_json(r.candidates[p.winner].knobs));
    x.set("winner_ms", p.winner_ms);
    x.set("chosen_ms", p.chosen_ms);
    runs.push(std::move(x));
  }
  sens.set("runs", runs);
  j.set("sensitivity", sens);
  j.set("fragile", e->fragile);
  return j;
}

}  // namespace

io::Json plan_to_json(const plan::PlanResult& r, const plan::Explanation* e, std::size_t top) {
  Json doc = io::plan_spec_to_json(plan::plan_spec(r));
  doc.set("family", r.family);
  doc.set("chosen", chosen_to_json(r));
  Json candidates = Json::array();
  for (std::size_t i = 0; i < r.candidates.size() && i < top; ++i)
    candidates.push(candidate_to_json(r.candidates[i], r.chosen.iteration_ms));
  doc.set("candidates", candidates);
  doc.set("candidates_evaluated", static_cast<std::int64_t>(r.candidates.size()));
  Json baselines = Json::array();
  for (const plan::Baseline& b : r.baselines) {
    Json j = Json::object();
    j.set("name", b.name);
    j.set("iteration_ms", b.iteration_ms);
    j.set("speedup", b.iteration_ms / r.chosen.iteration_ms);
    baselines.push(std::move(j));
  }
  doc.set("baselines", baselines);
  doc.set("explanation", explanation_to_json(r, e));
  r.search->write_json(doc, r);  // the family's own search record
  return doc;
}

}  // namespace moeplan::output
