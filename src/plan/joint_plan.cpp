// The joint search as a planner (`plan --joint`) and its search record: the
// joint keys of the plan's JSON, its text, its explanation and --emit.

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/memory.hpp>
#include <moeplan/plan/family_registry.hpp>
#include <moeplan/plan/joint.hpp>
#include <moeplan/plan/open_knobs.hpp>
#include <moeplan/plan/mapping_search.hpp>
#include <moeplan/plan/megatron_arguments.hpp>
#include <moeplan/plan/result_json.hpp>
#include <moeplan/plan/search_record.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::plan {
namespace {

using io::Json;

// A mapping at its overlap schedule (the joint search).
Json joint_json(const JointResult& j) {
  Json out = mapping_to_json(j.priced);
  Json overlap = Json::object();
  overlap.set("family", j.overlap.family);
  overlap.set("schedule", j.overlap.schedule);
  overlap.set("degree_forward", j.overlap.none() ? Json(nullptr) : Json(j.degree_forward));
  overlap.set("degree_backward", j.overlap.none() ? Json(nullptr) : Json(j.degree_backward));
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

std::string mapping_line(const MappingResult& f) {
  return fmt::format(
      "tp {} cp {} pp {} vpp {} ep {} etp {} (dp {} edp {}) mb {}: {:.1f} ms, MFU {:.1f}%, {:.1f} GiB "
      "per GPU",
      f.config.tp, f.config.cp, f.config.pp, f.config.vpp, f.config.ep, f.config.etp, f.config.dp, f.config.edp,
      f.config.micro_batch, f.iteration_ms, 100 * f.mfu, f.memory_bytes_per_gpu / kGiB);
}

std::string joint_line(const JointResult& j) {
  std::string overlap = "no overlap";
  if (!j.overlap.none()) {
    const OverlapProbing& probing = *family_named(j.overlap.family).overlap();
    overlap = probing.per_phase_degrees()
                  ? fmt::format("{} ({} {} forward, {} backward)", j.label(), probing.degree_symbol(),
                                j.degree_forward, j.degree_backward)
                  : fmt::format("{} ({} {})", j.label(), probing.degree_symbol(), j.overlap.degree);
  }
  return mapping_line(j.priced) + ", " + overlap;
}

Candidate joint_candidate(const JointResult& j) {
  Candidate c = mapping_candidate(j.label(), j.priced);
  if (!j.overlap.none()) {
    if (family_named(j.overlap.family).overlap()->per_phase_degrees()) {
      c.knobs.degree_forward = j.degree_forward;
      c.knobs.degree_backward = j.degree_backward;
    } else {
      c.knobs.degree = j.overlap.degree;
    }
  }
  return c;
}

}  // namespace

void JointRecord::write_json(Json& doc, const PlanResult& r) const {
  (void)r;
  const JointSearch& s = search_;
  const JointResult& best = s.best();
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
}

std::string JointRecord::text(const PlanResult& r) const {
  const JointSearch& s = search_;
  const double best = s.best().priced.iteration_ms;
  std::string out = "joint plan for " + r.scenario + '\n';
  out += "  joint:           " + joint_line(s.best()) + '\n';
  out += fmt::format("  no overlap:      {} ({:.3f}x)\n", joint_line(s.best_no_overlap),
                     s.best_no_overlap.priced.iteration_ms / best);
  if (s.default_mapping)
    out += fmt::format("  default mapping: {} ({:.3f}x)\n", joint_line(*s.default_mapping),
                       s.default_mapping->priced.iteration_ms / best);
  out += fmt::format("  {} mappings, {} fit, {} evaluated with every schedule ({} layer shapes probed)\n",
                     s.mappings, s.fitting, s.evaluated, s.shapes_probed);
  return out;
}

BindingConstraint JointRecord::binding_constraint(const model::ScenarioSpec& scenario, const PlanResult& r) const {
  // Memory binds when a mapping that does not fit beats the plan even without overlap.
  const MappingResult& f = *search_.fastest;
  if (!f.fits && f.iteration_ms < r.chosen.iteration_ms)
    return {"memory",
            fmt::format("a mapping that does not fit (tp {} cp {} pp {} vpp {} ep {} etp {} mb {}: {:.1f} ms with "
                        "no overlap) needs {:.1f} GiB per GPU, more than the {:.1f} GiB usable",
                        f.config.tp, f.config.cp, f.config.pp, f.config.vpp, f.config.ep, f.config.etp,
                        f.config.micro_batch, f.iteration_ms, f.memory_bytes_per_gpu / kGiB,
                        cost::usable_memory_bytes(scenario.cluster.gpu) / kGiB)};
  return {"none", "no mapping that does not fit is faster than the plan, even with no overlap" +
                      cost::tight_memory_clause(scenario.cluster.gpu, r.chosen.memory_bytes_per_gpu)};
}

Savings JointRecord::savings(const PlanResult& r) const {
  (void)r;
  // Against the best mapping with no overlap: its stage's terms, and the
  // communication left exposed once the schedule has hidden its part.
  const MappingBreakdown& b = search_.best_no_overlap.priced.breakdown;
  const MappingBreakdown& c = search_.best().priced.breakdown;
  return {"no-overlap",
          {{"attention_ms", b.attention_ms, c.attention_ms},
           {"moe_compute_ms", b.moe_compute_ms, c.moe_compute_ms},
           {"exposed_comm_ms", b.a2a_ms + b.agrs_ms + b.dp_ms,
            c.a2a_ms + c.agrs_ms + c.dp_ms - search_.best().hidden_ms()},
           {"pp_bubble_ms", b.pp_bubble_ms, c.pp_bubble_ms},
           {"recompute_ms", b.recompute_ms, c.recompute_ms},
           {"model_ends_ms", b.model_ends_ms, c.model_ends_ms},
           {"host_wait_ms", b.host_wait_ms, c.host_wait_ms}}};
}

double JointRecord::evaluate_candidate(const ScenarioRun& run, const PlanResult& r, const Candidate& c) const {
  (void)r;
  // The candidate's mapping and schedule at its degree, probed again on this cost model.
  const model::PlanKnobs& k = c.knobs;
  OverlapSchedule overlap{OverlapSchedule::kNone, OverlapSchedule::kNone, 0};
  if (const std::size_t slash = c.schedule.find('/'); slash != std::string::npos)
    overlap = {c.schedule.substr(0, slash), c.schedule.substr(slash + 1), k.degree.value_or(0)};
  return price_joint(with_knob_choices(run.spec(), k), run.costs(),
                     cost::MappingConfig::from(*k.parallelism, *k.micro_batch_size), overlap)
      .priced.iteration_ms;
}

SearchPicture JointRecord::picture(const model::ScenarioSpec& scenario, const PlanResult& r,
                                   const Candidate& chosen) const {
  (void)scenario;
  (void)r;
  (void)chosen;
  return {};  // the report draws scenario plans; a joint plan has no page of its own
}

std::string JointRecord::emit_format() const { return "megatron"; }

std::string JointRecord::emit(const PlanResult& r, const model::ScenarioSpec& scenario) const {
  std::string out = megatron_arguments(r, scenario);
  if (r.chosen.schedule != OverlapSchedule::kNone)
    out += fmt::format(
        "# the plan's time assumes overlap schedule {} ({}), which is not a Megatron-LM option: without it the "
        "mapping above runs {} ms per iteration\n",
        r.chosen.schedule, r.chosen.knobs.degree ? fmt::format("degree {}", *r.chosen.knobs.degree)
                                                 : fmt::format("r {} forward, {} backward",
                                                               r.chosen.knobs.degree_forward.value_or(0),
                                                               r.chosen.knobs.degree_backward.value_or(0)),
        search_.best().no_overlap_ms);
  return out;
}

std::string JointRecord::emit_refusal_note() const { return " (a joint plan)"; }

PlanResult plan_joint(const ScenarioRun& run, const PlanRequest& request) {
  const model::ScenarioSpec& s = run.spec();
  if (!run.family().searches_mappings())
    throw Error(ErrorKind::Input,
                fmt::format("searches the mappings of a {} scenario (model, cluster and batch); {} is a {} scenario "
                            "with its mapping fixed",
                            mapping_family().name(), s.name, s.schedule.family),
                "request.joint");
  if (request.schedule != "all")
    throw Error(ErrorKind::Input, "the joint search tries every schedule of every overlap family at every mapping",
                "request.schedule");
  PlanResult r;
  r.scenario = s.name;
  r.family = "joint";
  r.tokens_per_iteration = static_cast<double>(s.workload.global_batch_size) * static_cast<double>(s.workload.seq_len);
  JointOptions o;
  o.threads = request.threads;
  o.progress = request.progress;
  JointSearch search = search_joint(s, run.costs(), o, cost::MappingConfig::from(s.parallel, s.workload.micro_batch_size));
  for (const JointResult& j : search.ranked) r.candidates.push_back(joint_candidate(j));
  r.chosen = r.candidates.front();
  r.baselines.push_back({"no-overlap", search.best_no_overlap.priced.iteration_ms});
  if (search.default_mapping) r.baselines.push_back({"default-mapping", search.default_mapping->priced.iteration_ms});
  r.threads = search.threads;
  r.search = std::make_shared<JointRecord>(std::move(search));
  return r;
}

}  // namespace moeplan::plan
