#include <algorithm>
#include <cmath>

#include <moeplan/io/plan_writer.hpp>
#include <moeplan/report/plan_report.hpp>

namespace moeplan::report {
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

// The overlap families' keys besides their own: the Tutel baseline and the scenario's memory.
void overlap_keys(Json& doc, const plan::PlanResult& r) {
  const double tutel_ms = r.baseline("tutel")->iteration_ms;
  doc.set("tutel_ms", tutel_ms);
  doc.set("memory_bytes_per_gpu", r.chosen.memory_bytes_per_gpu);
  doc.set("fits", r.chosen.fits);
  doc.set("speedup_vs_tutel", tutel_ms / r.chosen.iteration_ms);
}

Json schedule_entry(const plan::PlanResult& r, const plan::Evaluation& e) {
  Json entry = evaluation_to_json(r.scenario, e);
  entry.set("speedup_vs_none", r.baseline("none")->iteration_ms / e.iteration_ms);
  entry.set("speedup_vs_tutel", r.baseline("tutel")->iteration_ms / e.iteration_ms);
  return entry;
}

void foldmoe_keys(Json& doc, const plan::PlanResult& r, const plan::FoldMoePlan& p) {
  overlap_keys(doc, r);
  Json knobs = io::knobs_to_json(r.chosen.knobs);
  knobs.set("slicing_scheme", r.chosen.schedule == "1a1m-uniform"    ? "time-uniform"
                              : r.chosen.knobs.slicing_tokens.empty() ? "none"
                                                                      : "token-uniform");
  doc.set("knobs", knobs);
  for (const plan::ScheduleChoice& c : p.schedules)
    if (c.best.schedule == r.chosen.schedule) {
      doc.set("a2a_critical_ms", c.best.a2a_critical_ms);
      doc.set("a2a_total_ms", c.best.a2a_total_ms);
    }
  Json all = Json::array();
  for (const plan::ScheduleChoice& c : p.schedules) {
    Json entry = schedule_entry(r, c.best);
    Json tried = Json::array();
    for (const auto& [d, ms] : c.tried) tried.push(Json(Json::Array{Json(d), Json(ms)}));
    entry.set("degrees_tried", tried);
    all.push(std::move(entry));
  }
  doc.set("schedules", all);
}

void fsmoe_keys(Json& doc, const plan::PlanResult& r, const plan::FsMoePlan& p) {
  overlap_keys(doc, r);
  Json knobs = io::knobs_to_json(r.chosen.knobs);
  Json per_layer = Json::array();
  for (std::int64_t d : p.partition.degree_backward) per_layer.push(d);
  knobs.set("degree_backward_per_layer", per_layer);
  knobs.set("tutel_degree", p.tutel_degree);
  knobs.set("grad_tail_bytes", p.partition.tail_bytes);
  doc.set("knobs", knobs);
  Json closed = Json::object();
  closed.set("case_forward", plan::to_string(p.degrees.forward.which));
  closed.set("t_moe_forward_ms", p.degrees.forward.t_moe_ms);
  closed.set("case_backward", plan::to_string(p.degrees.backward.which));
  closed.set("t_moe_backward_ms", p.degrees.backward.t_moe_ms);
  closed.set("overlap_gap_ms", p.overlap_gap_ms);
  doc.set("closed_form", closed);
  Json all = Json::array();
  for (const plan::Evaluation& e : p.schedules) all.push(schedule_entry(r, e));
  doc.set("schedules", all);
}

void flowmoe_keys(Json& doc, const plan::PlanResult& r, const plan::FlowMoePlan& p) {
  overlap_keys(doc, r);
  // The BO trace of the flowmoe schedule (the paper's tuner), whichever schedule won.
  for (const plan::FlowMoeChoice& flow : p.schedules) {
    if (flow.best.schedule != "flowmoe") continue;
    Json trace = Json::array();
    for (const plan::TunerSample& sample : flow.tuning.trace) {
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
  for (const plan::FlowMoeChoice& c : p.schedules) {
    Json entry = evaluation_to_json(r.scenario, c.best);
    if (c.ar_chunk_bytes > 0) entry.set("ar_chunk_bytes", c.ar_chunk_bytes);
    entry.set("speedup_vs_none", r.baseline("none")->iteration_ms / c.best.iteration_ms);
    entry.set("speedup_vs_tutel", r.baseline("tutel")->iteration_ms / c.best.iteration_ms);
    list.push(std::move(entry));
  }
  doc.set("schedules", list);
}

Json folding_json(const plan::FoldingResult& f) {
  Json j = Json::object();
  Json par = io::parallelism_to_json(f.config.parallel_spec());
  par.set("micro_batch_size", f.config.micro_batch);
  j.set("parallelism", par);
  j.set("iteration_ms", f.iteration_ms);
  j.set("mfu", f.mfu);
  j.set("memory_bytes_per_gpu", f.memory_bytes_per_gpu);
  j.set("fits", f.fits);
  Json b = Json::object();
  b.set("attention_ms", f.breakdown.attention_ms);
  b.set("moe_compute_ms", f.breakdown.moe_compute_ms);
  b.set("a2a_ms", f.breakdown.a2a_ms);
  b.set("agrs_ms", f.breakdown.agrs_ms);
  b.set("dp_ms", f.breakdown.dp_ms);
  b.set("pp_bubble_ms", f.breakdown.pp_bubble_ms);
  j.set("breakdown", b);
  return j;
}

void folding_keys(Json& doc, const plan::PlanResult& r, const plan::FoldingSearch& s) {
  const plan::FoldingResult& best = s.folded.front();
  doc.set("mfu", best.mfu);
  doc.set("memory_bytes_per_gpu", best.memory_bytes_per_gpu);
  doc.set("folded", folding_json(best));
  doc.set("coupled", r.baseline("coupled") != nullptr ? folding_json(s.coupled.front()) : Json(nullptr));
  Json top = Json::array();
  for (std::size_t i = 0; i < s.folded.size() && i < 10 && s.folded[i].fits; ++i) top.push(folding_json(s.folded[i]));
  doc.set("top10", top);
  doc.set("mappings_searched", static_cast<std::int64_t>(s.folded.size() + s.coupled.size()));
}

// A mapping at its overlap schedule (the joint search).
Json joint_json(const plan::JointResult& j) {
  Json out = folding_json(j.priced);
  Json overlap = Json::object();
  overlap.set("family", j.overlap.family);
  overlap.set("schedule", j.overlap.schedule);
  overlap.set("degree_forward", j.overlap.family == "none" ? Json(nullptr) : Json(j.degree_forward));
  overlap.set("degree_backward", j.overlap.family == "none" ? Json(nullptr) : Json(j.degree_backward));
  out.set("overlap", overlap);
  out.set("no_overlap_ms", j.no_overlap_ms);
  Json hidden = Json::object();
  hidden.set("chunk_forward_ms", j.saved.chunk_forward_saved_ms);
  hidden.set("chunk_backward_ms", j.saved.chunk_backward_saved_ms);
  hidden.set("optimizer_ms", j.saved.optimizer_saved_ms);
  hidden.set("gradient_hidden_fraction", j.gradient_hidden_fraction);
  hidden.set("per_stage_ms", j.hidden_ms());
  out.set("hidden", hidden);
  return out;
}

void joint_keys(Json& doc, const plan::PlanResult& r, const plan::JointSearch& s) {
  const plan::JointResult& best = s.best();
  doc.set("mfu", best.priced.mfu);
  doc.set("memory_bytes_per_gpu", best.priced.memory_bytes_per_gpu);
  doc.set("joint", joint_json(best));
  doc.set("no_overlap", joint_json(s.best_no_overlap));
  doc.set("default_mapping", s.default_mapping ? joint_json(*s.default_mapping) : Json(nullptr));
  doc.set("speedup_vs_no_overlap", s.best_no_overlap.priced.iteration_ms / best.priced.iteration_ms);
  doc.set("speedup_vs_default_mapping", s.default_mapping
                                            ? Json(s.default_mapping->priced.iteration_ms / best.priced.iteration_ms)
                                            : Json(nullptr));
  Json top = Json::array();
  for (std::size_t i = 0; i < s.ranked.size() && i < 10; ++i) top.push(joint_json(s.ranked[i]));
  doc.set("joint_top10", top);
  Json counts = Json::object();
  counts.set("mappings", static_cast<std::int64_t>(s.mappings));
  counts.set("fitting", static_cast<std::int64_t>(s.fitting));
  counts.set("evaluated", static_cast<std::int64_t>(s.evaluated));
  counts.set("shapes_probed", static_cast<std::int64_t>(s.shapes_probed));
  counts.set("gradient_probes", static_cast<std::int64_t>(s.gradient_probes));
  counts.set("configurations", static_cast<std::int64_t>(s.configurations));
  doc.set("search", counts);
  (void)r;
}

}  // namespace

io::Json plan_to_json(const plan::PlanResult& r, const plan::Explanation* e, std::size_t top) {
  Json doc = io::plan_to_json(plan::plan_spec(r));
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
  std::visit(
      [&](const auto& search) {
        using T = std::decay_t<decltype(search)>;
        if constexpr (std::is_same_v<T, plan::FoldMoePlan>) foldmoe_keys(doc, r, search);
        if constexpr (std::is_same_v<T, plan::FsMoePlan>) fsmoe_keys(doc, r, search);
        if constexpr (std::is_same_v<T, plan::FlowMoePlan>) flowmoe_keys(doc, r, search);
        if constexpr (std::is_same_v<T, plan::FoldingSearch>) folding_keys(doc, r, search);
        if constexpr (std::is_same_v<T, plan::JointSearch>) joint_keys(doc, r, search);
      },
      r.search);
  return doc;
}

}  // namespace moeplan::report
