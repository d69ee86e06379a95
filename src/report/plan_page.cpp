// What the report of a plan shows, gathered from the plan, its explanation
// and the chosen candidate and baseline run again for their timelines.

#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/version.hpp>
#include <moeplan/io/timeline_layout.hpp>
#include <moeplan/plan/candidate_run.hpp>
#include <moeplan/report/html_report.hpp>
#include <moeplan/report/plan_report.hpp>

namespace moeplan::report {
namespace {

// Two formulations of one time (a plan's figure and its run again; the split's
// sums) agree to rounding: anything more is a bug, never drawn.
constexpr double kSameTimeTolerance = 1e-9;
// Folding: the best folded mappings drawn as bars (the coupled best joins them).
constexpr std::size_t kFoldingBars = 6;

bool same_time(double a, double b) { return std::abs(a - b) <= kSameTimeTolerance * std::max(std::abs(a), std::abs(b)); }

io::Json split_to_json(const IterationSplit& s, const std::string& role) {
  io::Json j = io::Json::object();
  j.set("name", s.name);
  j.set("role", role);
  j.set("iteration_ms", s.iteration_ms);
  j.set("compute_ms", s.compute_ms);
  j.set("exposed_comm_ms", s.exposed_comm_ms);
  j.set("idle_ms", s.idle_ms);
  return j;
}

io::Json ops_json() {
  io::Json ops = io::Json::array();
  for (int i = 0; i <= static_cast<int>(model::OpClass::P2P); ++i) {
    const auto op = static_cast<model::OpClass>(i);
    io::Json j = io::Json::object();
    j.set("name", model::to_string(op));
    j.set("colour", io::op_colour(op));
    ops.push(std::move(j));
  }
  return ops;
}

std::string mapping_name(const plan::FoldingConfig& c) {
  return fmt::format("tp{} cp{} pp{} vpp{} ep{} etp{} mb{}", c.tp, c.cp, c.pp, c.vpp, c.ep, c.etp, c.micro_batch);
}

// Whether folding mapping c is the one the knobs name.
bool is_mapping(const plan::FoldingConfig& c, const model::PlanKnobs& k) {
  if (!k.parallelism || !k.micro_batch_size) return false;
  const model::ParallelSpec& p = *k.parallelism;
  return *k.micro_batch_size == c.micro_batch && p.tp == c.tp && p.cp == c.cp && p.pp == c.pp && p.vpp == c.vpp &&
         p.ep == c.ep && p.etp == c.etp;
}

// The knobs a timeline ran at, in a few words (FSMoE's degrees per phase too).
std::string knobs_words(const plan::PlanResult& r, const model::PlanKnobs& k) {
  std::string text = knobs_text(k);
  if (r.family == "fsmoe" && k.degree_forward && k.degree_backward)
    text += fmt::format("{}r {} forward, {} backward", text.empty() ? "" : " ", *k.degree_forward, *k.degree_backward);
  return text;
}

io::Json timeline_entry(const plan::CandidateRun& c, const std::string& label, const std::string& knobs,
                        bool stages) {
  io::Json j = timeline_to_json(c.built.graph, c.timeline, report_ranks(c.built.graph, c.timeline));
  j.set("label", label);
  j.set("schedule", c.built.schedule);
  j.set("knobs", knobs);
  j.set("stages", stages);
  return j;
}

// Every evaluation the overlap family's search record holds, in its order.
std::vector<const plan::Evaluation*> evaluations(const plan::PlanResult& r) {
  std::vector<const plan::Evaluation*> out;
  if (const auto* p = std::get_if<plan::FoldMoePlan>(&r.search))
    for (const plan::ScheduleChoice& c : p->schedules) out.push_back(&c.best);
  if (const auto* p = std::get_if<plan::FsMoePlan>(&r.search))
    for (const plan::Evaluation& e : p->schedules) out.push_back(&e);
  if (const auto* p = std::get_if<plan::FlowMoePlan>(&r.search))
    for (const plan::FlowMoeChoice& c : p->schedules) out.push_back(&c.best);
  return out;
}

io::Json bars(const plan::PlanResult& r, const plan::Candidate& chosen) {
  io::Json out = io::Json::array();
  if (const auto* s = std::get_if<plan::FoldingSearch>(&r.search)) {
    // The best folded mappings that fit, and the chosen one wherever it ranks.
    for (std::size_t i = 0; i < s->folded.size(); ++i) {
      const bool is_chosen = is_mapping(s->folded[i].config, chosen.knobs);
      if (!is_chosen && (i >= kFoldingBars || !s->folded[i].fits)) continue;
      out.push(split_to_json(split_of(s->folded[i], "folded " + mapping_name(s->folded[i].config)),
                             is_chosen ? "chosen" : ""));
    }
    if (r.baseline("coupled") != nullptr)
      out.push(split_to_json(split_of(s->coupled.front(), "coupled " + mapping_name(s->coupled.front().config)),
                             "baseline"));
    return out;
  }
  for (const plan::Evaluation* e : evaluations(r)) {
    IterationSplit split = split_of(*e);
    split.name = fmt::format("{} (d {})", e->schedule, e->degree);
    out.push(split_to_json(split, e->schedule == chosen.schedule ? "chosen" : e->schedule == "none" ? "baseline" : ""));
  }
  return out;
}

// Folding: every mapping searched, as columns, for the MFU-memory scatter.
io::Json mappings(const plan::FoldingSearch& s, const model::PlanKnobs& chosen) {
  io::Json mode = io::Json::array(), memory = io::Json::array(), mfu = io::Json::array(), ms = io::Json::array(),
           fits = io::Json::array(), label = io::Json::array();
  std::optional<std::int64_t> chosen_index;
  std::int64_t index = 0;
  for (const auto* list : {&s.folded, &s.coupled})
    for (const plan::FoldingResult& f : *list) {
      const bool folded = list == &s.folded;
      mode.push(folded ? "folded" : "coupled");
      memory.push(f.memory_bytes_per_gpu);
      mfu.push(f.mfu);
      ms.push(f.iteration_ms);
      fits.push(f.fits);
      label.push(mapping_name(f.config));
      if (folded && !chosen_index && is_mapping(f.config, chosen)) chosen_index = index;
      ++index;
    }
  io::Json j = io::Json::object();
  j.set("mode", mode);
  j.set("memory_bytes", memory);
  j.set("mfu", mfu);
  j.set("iteration_ms", ms);
  j.set("fits", fits);
  j.set("label", label);
  j.set("chosen", chosen_index ? io::Json(*chosen_index) : io::Json(nullptr));
  return j;
}

}  // namespace

IterationSplit split_of(const plan::Evaluation& e) {
  IterationSplit s{e.schedule, e.iteration_ms, e.compute_ms, e.exposed_comm_ms, 0};
  const double idle = e.iteration_ms - e.compute_ms - e.exposed_comm_ms;
  MOEPLAN_CHECK(idle >= -kSameTimeTolerance * e.iteration_ms,
                fmt::format("{}: compute {} ms and exposed communication {} ms exceed the iteration's {} ms",
                            e.schedule, e.compute_ms, e.exposed_comm_ms, e.iteration_ms));
  s.idle_ms = std::max(0.0, idle);
  return s;
}

IterationSplit split_of(const plan::FoldingResult& f, const std::string& name) {
  const plan::FoldingBreakdown& b = f.breakdown;
  IterationSplit s{name, f.iteration_ms, b.attention_ms + b.moe_compute_ms, b.a2a_ms + b.agrs_ms + b.dp_ms, 0};
  const double idle = f.iteration_ms - s.compute_ms - s.exposed_comm_ms;
  MOEPLAN_CHECK(idle >= -kSameTimeTolerance * f.iteration_ms,
                fmt::format("{}: its breakdown ({} ms busy) exceeds the iteration's {} ms", name,
                            s.compute_ms + s.exposed_comm_ms, f.iteration_ms));
  s.idle_ms = std::max(0.0, idle);
  return s;
}

io::Json plan_report_data(const plan::ScenarioRun& run, const plan::PlanResult& r, const plan::Explanation& why,
                          const PlanReportInput& input) {
  io::Json notes = io::Json::array();
  for (const std::string& n : r.notes) notes.push(n);
  // The candidate drawn as chosen: the plan file's own choice, else the plan's.
  plan::Candidate chosen = r.chosen;
  if (input.plan_file) {
    chosen.schedule = input.plan_file->schedule;
    chosen.knobs = input.plan_file->knobs;
  }
  const plan::CandidateRun chosen_run = plan::run_candidate(run, r, chosen);
  const double chosen_ms = chosen_run.timeline.makespan_ms;
  if (input.plan_file) {
    if (!same_time(chosen_ms, input.plan_file->iteration_ms))
      notes.push(fmt::format("the plan file says {:.3f} ms per iteration; its knobs simulate to {:.3f} ms now (the "
                             "scenario or its cost profile changed since it was written)",
                             input.plan_file->iteration_ms, chosen_ms));
    if (chosen.schedule != r.chosen.schedule || knobs_text(chosen.knobs) != knobs_text(r.chosen.knobs))
      notes.push(fmt::format("planning the scenario again chooses {} ({}) at {:.3f} ms; the plan file's {} ({}) is "
                             "drawn as chosen",
                             r.chosen.schedule, knobs_words(r, r.chosen.knobs), r.chosen.iteration_ms,
                             chosen.schedule, knobs_words(r, chosen.knobs)));
  } else {
    MOEPLAN_CHECK(same_time(chosen_ms, r.chosen.iteration_ms),
                  fmt::format("the chosen candidate runs again in {} ms, not the plan's {} ms", chosen_ms,
                              r.chosen.iteration_ms));
  }
  const bool stages = r.family == "folding";
  io::Json timelines = io::Json::array();
  timelines.push(timeline_entry(chosen_run, "chosen", knobs_words(r, chosen.knobs), stages));
  if (const std::optional<plan::CandidateRun> base = plan::run_baseline(run, r)) {
    const plan::Baseline& figure = r.baselines.front();
    MOEPLAN_CHECK(same_time(base->timeline.makespan_ms, figure.iteration_ms),
                  fmt::format("baseline {} runs again in {} ms, not the plan's {} ms", figure.name,
                              base->timeline.makespan_ms, figure.iteration_ms));
    model::PlanKnobs knobs;
    if (const auto* search = std::get_if<plan::FoldingSearch>(&r.search)) {
      knobs.parallelism = search->coupled.front().config.parallel_spec();
      knobs.micro_batch_size = search->coupled.front().config.micro_batch;
    } else {
      knobs.degree = base->built.degree;
    }
    timelines.push(timeline_entry(*base, "baseline", knobs_words(r, knobs), stages));
  } else {
    notes.push("no baseline timeline: no coupled mapping fits in memory");
  }
  io::Json j = io::Json::object();
  j.set("kind", "plan");
  j.set("title", fmt::format("moeplan report: {}", r.scenario));
  j.set("input", input.input);
  j.set("version", std::string("moeplan ") + kVersion);
  j.set("family", r.family);
  j.set("ops", ops_json());
  j.set("plan", plan_to_json(r, &why));
  j.set("plan_text", plan_to_text(r, &why));
  j.set("notes", notes);
  j.set("timelines", timelines);
  j.set("bars", bars(r, chosen));
  if (const auto* s = std::get_if<plan::FoldingSearch>(&r.search)) {
    j.set("mappings", mappings(*s, chosen.knobs));
    j.set("memory_limit_bytes",
          static_cast<double>(run.spec().cluster.gpu.memory_bytes) * (1 - plan::MemoryModel{}.reserve_fraction));
  }
  return j;
}

}  // namespace moeplan::report
