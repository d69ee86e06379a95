#include <moeplan/plan/open_knobs.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/model/validate.hpp>

namespace moeplan::plan {
namespace {

bool searches(const model::ScenarioSpec& s, const char* knob) {
  return std::find(s.schedule.search.begin(), s.schedule.search.end(), knob) != s.schedule.search.end();
}

bool has_elementwise_line(const model::ScenarioSpec& s) {
  return s.profile && std::any_of(s.profile->costs.begin(), s.profile->costs.end(), [](const model::LinearCostSpec& c) {
           return c.op == model::OpClass::Elementwise && c.link == model::LinkClass::Local;
         });
}

// Why `variant`'s precision cannot be priced (empty: it can): the validation's reason.
std::string refusal(const model::ScenarioSpec& variant) {
  try {
    model::validate_precision(variant);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Input) throw;
    return e.reason();
  }
  return "";
}

std::vector<model::RecomputeSpec> recompute_ladder(const model::ScenarioSpec& s) {
  std::vector<model::RecomputeSpec> out(1);  // none
  out.front().granularity = "none";
  // Selective's output-discarding modules: they free memory for element-wise
  // kernels and MLA's up-projections, the cheapest reruns Megatron offers.
  model::RecomputeSpec selective;
  selective.granularity = "selective";
  const bool elementwise = has_elementwise_line(s);
  if (!s.model.is_dense() && elementwise) selective.modules.push_back("moe_act");
  if (s.model.mla) selective.modules.push_back("mla_up_proj");
  if ((!s.model.is_dense() || s.model.mla) && elementwise) selective.modules.push_back("layernorm");
  if (!selective.modules.empty()) out.push_back(selective);
  model::RecomputeSpec full;
  full.granularity = "full";
  out.push_back(full);
  return out;
}

}  // namespace

OpenKnobs open_knobs(const model::ScenarioSpec& s) {
  OpenKnobs out;
  std::vector<model::Precision> precisions{s.workload.precision};
  if (searches(s, "precision")) {
    precisions = {model::Precision::Bf16};
    for (const model::Precision p :
         {model::Precision::Fp8Tensorwise, model::Precision::Fp8Blockwise, model::Precision::Mxfp8}) {
      model::ScenarioSpec variant = s;
      variant.workload.precision = p;
      if (const std::string why = refusal(variant); !why.empty())
        out.notes.push_back(fmt::format("precision {} not searched: {}", model::to_string(p), why));
      else
        precisions.push_back(p);
    }
  }
  std::vector<model::RecomputeSpec> ladder{s.schedule.recompute};
  if (searches(s, "recompute")) ladder = recompute_ladder(s);
  for (const model::Precision p : precisions) {
    std::vector<model::ScenarioSpec> variants;
    for (const model::RecomputeSpec& r : ladder) {
      model::ScenarioSpec variant = s;
      variant.workload.precision = p;
      variant.schedule.recompute = r;
      variants.push_back(std::move(variant));
    }
    out.by_precision.push_back(std::move(variants));
  }
  return out;
}

model::ScenarioSpec with_knob_choices(const model::ScenarioSpec& s, const model::PlanKnobs& knobs) {
  if (!knobs.precision && !knobs.recompute) return s;
  model::ScenarioSpec out = s;
  if (knobs.precision) out.workload.precision = *knobs.precision;
  if (knobs.recompute) out.schedule.recompute = *knobs.recompute;
  out.schedule.search.clear();
  return out;
}

}  // namespace moeplan::plan
