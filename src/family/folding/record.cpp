// The folding search's record: its keys of the plan's JSON, its text, what
// bound the choice (memory), its savings against the best coupled mapping,
// the report's MFU-against-memory scatter and --emit megatron.

#include <fmt/format.h>

#include <moeplan/cost/memory.hpp>
#include <moeplan/family/folding/family.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/plan/megatron_arguments.hpp>
#include <moeplan/plan/result_json.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::folding {
namespace {

using io::Json;
// The best folded mappings drawn as bars (the coupled best joins them).
constexpr std::size_t kFoldingBars = 6;

std::string mapping_line(const plan::MappingResult& f) {
  // The knobs schedule.search opened, when it did.
  std::string knobs;
  if (f.chosen_precision) knobs += fmt::format(" {}", model::to_string(*f.chosen_precision));
  if (f.chosen_recompute) knobs += fmt::format(" recompute {}", model::recompute_text(*f.chosen_recompute));
  return fmt::format(
      "tp {} cp {} pp {} vpp {} ep {} etp {} (dp {} edp {}) mb {}{}: {:.1f} ms, MFU {:.1f}%, {:.1f} GiB "
      "per GPU",
      f.config.tp, f.config.cp, f.config.pp, f.config.vpp, f.config.ep, f.config.etp, f.config.dp, f.config.edp,
      f.config.micro_batch, knobs, f.iteration_ms, 100 * f.mfu, f.memory_bytes_per_gpu / kGiB);
}

std::string mapping_name(const cost::MappingConfig& c) {
  return fmt::format("tp{} cp{} pp{} vpp{} ep{} etp{} mb{}", c.tp, c.cp, c.pp, c.vpp, c.ep, c.etp, c.micro_batch);
}

// Whether mapping c is the one the knobs name.
bool is_mapping(const cost::MappingConfig& c, const model::PlanKnobs& k) {
  if (!k.parallelism || !k.micro_batch_size) return false;
  const model::ParallelSpec& p = *k.parallelism;
  return *k.micro_batch_size == c.micro_batch && p.tp == c.tp && p.cp == c.cp && p.pp == c.pp && p.vpp == c.vpp &&
         p.ep == c.ep && p.etp == c.etp;
}

// A mapping's bar: compute = attention + MoE compute; exposed communication =
// AlltoAll + AllGather/ReduceScatter + the optimizer's collectives (a pipeline
// chunk runs its layers' communication in line with their compute, so none of
// it is hidden); the rest is idle (the bubble, compute slowed beside P2P).
plan::SearchBar bar_of(const plan::MappingResult& f, const std::string& name, const std::string& role) {
  const plan::MappingBreakdown& b = f.breakdown;
  return {name, f.iteration_ms, b.attention_ms + b.moe_compute_ms, b.a2a_ms + b.agrs_ms + b.dp_ms, role};
}

// Every mapping searched, as columns, for the MFU-memory scatter.
Json mapping_columns(const std::vector<plan::MappingResult>& folded, const std::vector<plan::MappingResult>& coupled,
                     const model::PlanKnobs& chosen) {
  Json mode = Json::array(), memory = Json::array(), mfu = Json::array(), ms = Json::array(), fits = Json::array(),
       label = Json::array();
  std::optional<std::int64_t> chosen_index;
  std::int64_t index = 0;
  for (const auto* list : {&folded, &coupled})
    for (const plan::MappingResult& f : *list) {
      const bool is_folded = list == &folded;
      mode.push(is_folded ? "folded" : "coupled");
      memory.push(f.memory_bytes_per_gpu);
      mfu.push(f.mfu);
      ms.push(f.iteration_ms);
      fits.push(f.fits);
      label.push(mapping_name(f.config));
      if (is_folded && !chosen_index && is_mapping(f.config, chosen)) chosen_index = index;
      ++index;
    }
  Json j = Json::object();
  j.set("mode", mode);
  j.set("memory_bytes", memory);
  j.set("mfu", mfu);
  j.set("iteration_ms", ms);
  j.set("fits", fits);
  j.set("label", label);
  j.set("chosen", chosen_index ? Json(*chosen_index) : Json(nullptr));
  return j;
}

}  // namespace

void FoldingRecord::write_json(Json& doc, const plan::PlanResult& r) const {
  const plan::MappingResult& best = folded_.front();
  doc.set("mfu", best.mfu);
  doc.set("memory_bytes_per_gpu", best.memory_bytes_per_gpu);
  doc.set("folded", plan::mapping_to_json(best));
  doc.set("coupled", r.baseline("coupled") != nullptr ? plan::mapping_to_json(coupled_.front()) : Json(nullptr));
  Json top = Json::array();
  for (std::size_t i = 0; i < folded_.size() && i < 10 && folded_[i].fits; ++i)
    top.push(plan::mapping_to_json(folded_[i]));
  doc.set("top10", top);
  doc.set("mappings_searched", static_cast<std::int64_t>(folded_.size() + coupled_.size()));
  std::int64_t extrapolated = 0;
  for (const auto* list : {&folded_, &coupled_})
    for (const plan::MappingResult& f : *list) extrapolated += f.pipeline.extrapolated ? 1 : 0;
  doc.set("pipelines_extrapolated", extrapolated);
}

std::string FoldingRecord::text(const plan::PlanResult& r) const {
  std::string out = "plan for " + r.scenario + '\n';
  out += "  folded:  " + mapping_line(folded_.front()) + '\n';
  out += r.baseline("coupled") != nullptr ? "  coupled: " + mapping_line(coupled_.front()) + '\n'
                                          : std::string("  coupled: no mapping fits\n");
  return out;
}

plan::BindingConstraint FoldingRecord::binding_constraint(const model::ScenarioSpec& scenario,
                                                          const plan::PlanResult& r) const {
  (void)r;
  // The knobs schedule.search opened, at the chosen mapping: a recomputation
  // chosen because a lighter one did not fit is memory's doing; the
  // precisions' times say why the precision won.
  const plan::MappingResult& chosen = folded_.front();
  const std::string knobs = chosen.knob_choice.empty() ? "" : "; " + chosen.knob_choice;
  if (chosen.recompute_for_memory && chosen.chosen_recompute)
    return {"memory", fmt::format("recompute {} chosen at the best mapping: {}",
                                  model::recompute_text(*chosen.chosen_recompute), chosen.knob_choice)};
  // The fastest mapping of all, fitting or not: if it does not fit, memory bound the choice.
  const plan::MappingResult* fastest = nullptr;
  for (const plan::MappingResult& f : folded_)
    if (fastest == nullptr || f.iteration_ms < fastest->iteration_ms) fastest = &f;
  if (fastest != nullptr && !fastest->fits)
    return {"memory",
            fmt::format("the fastest mapping (tp {} cp {} pp {} vpp {} ep {} etp {} mb {}: {:.1f} ms) needs {:.1f} "
                        "GiB per GPU, more than the {:.1f} GiB usable{}",
                        fastest->config.tp, fastest->config.cp, fastest->config.pp, fastest->config.vpp,
                        fastest->config.ep, fastest->config.etp, fastest->config.micro_batch, fastest->iteration_ms,
                        fastest->memory_bytes_per_gpu / kGiB, cost::usable_memory_bytes(scenario.cluster.gpu) / kGiB,
                        knobs)};
  // Fitting by less than the memory model's largest under-prediction of a
  // measured peak is said: such a plan may not fit (docs/cost-model.md, "Memory").
  return {"none", "the fastest mapping searched fits in memory" + knobs +
                      cost::tight_memory_clause(scenario.cluster.gpu, chosen.memory_bytes_per_gpu)};
}

plan::Savings FoldingRecord::savings(const plan::PlanResult& r) const {
  if (r.baseline("coupled") == nullptr) return {};
  const plan::MappingBreakdown& b = coupled_.front().breakdown;
  const plan::MappingBreakdown& c = folded_.front().breakdown;
  return {"coupled",
          {{"attention_ms", b.attention_ms, c.attention_ms},
           {"moe_compute_ms", b.moe_compute_ms, c.moe_compute_ms},
           {"a2a_ms", b.a2a_ms, c.a2a_ms},
           {"agrs_ms", b.agrs_ms, c.agrs_ms},
           {"dp_ms", b.dp_ms, c.dp_ms},
           {"pp_bubble_ms", b.pp_bubble_ms, c.pp_bubble_ms},
           {"recompute_ms", b.recompute_ms, c.recompute_ms},
           {"model_ends_ms", b.model_ends_ms, c.model_ends_ms},
           {"host_wait_ms", b.host_wait_ms, c.host_wait_ms}}};
}

plan::SearchPicture FoldingRecord::picture(const model::ScenarioSpec& scenario, const plan::PlanResult& r,
                                           const plan::Candidate& chosen) const {
  plan::SearchPicture p;
  p.chart = "mfu-memory";
  p.bars_by = "mapping";
  p.stage_lanes = true;
  // The best folded mappings that fit, and the chosen one wherever it ranks.
  for (std::size_t i = 0; i < folded_.size(); ++i) {
    const bool is_chosen = is_mapping(folded_[i].config, chosen.knobs);
    if (!is_chosen && (i >= kFoldingBars || !folded_[i].fits)) continue;
    p.bars.push_back(bar_of(folded_[i], "folded " + mapping_name(folded_[i].config), is_chosen ? "chosen" : ""));
  }
  if (r.baseline("coupled") != nullptr)
    p.bars.push_back(bar_of(coupled_.front(), "coupled " + mapping_name(coupled_.front().config), "baseline"));
  p.chart_data = mapping_columns(folded_, coupled_, chosen.knobs);
  p.memory_limit_bytes = cost::usable_memory_bytes(scenario.cluster.gpu);
  return p;
}

std::string FoldingRecord::emit(const plan::PlanResult& r, const model::ScenarioSpec& scenario) const {
  return plan::megatron_arguments(r, scenario);
}

}  // namespace moeplan::folding
