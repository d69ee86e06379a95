#include <moeplan/model/options.hpp>

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/family_rules.hpp>

namespace moeplan::model {
namespace {

// The rules that hold whatever a scenario's family: fields no family's time
// reads, and fields that need another field to mean anything. Each family adds
// its own (model/family_rules.hpp), so this table names no family.
std::vector<OptionRule> make_rules() {
  using S = const ScenarioSpec&;
  std::vector<OptionRule> r;
  // Hardware: every time comes from the scenario's cost profile.
  for (const char* f : {"cluster.intra_link.bandwidth_gbit_s", "cluster.inter_link.bandwidth_gbit_s"})
    r.push_back({f, "every scenario",
                 "times come from the cost profile (derive one from the cluster with `moeplan "
                 "datasheet-profile`, or fit one with `moeplan fit`)",
                 [](S) { return true; }});
  for (const char* f : {"cluster.gpu.sm_count", "cluster.gpu.memory_gbytes_per_s", "cluster.gpu.gemm_tile_m",
                        "cluster.gpu.gemm_tile_n", "cluster.gpu.gemm_efficiency", "cluster.gpu.fused_attention[*].",
                        "cluster.gpu.fused_cross_entropy_efficiency", "cluster.gpu.gradient_buffer_efficiency"})
    r.push_back({f, "every scenario",
                 "times come from the cost profile; these enter the GEMM, attention and fused-loss lines and the "
                 "shape model of `moeplan datasheet-profile` only",
                 [](S) { return true; }});
  for (const char* f : {"cluster.intra_collectives.efficiency", "cluster.intra_collectives.fixed_us",
                        "cluster.intra_collectives.step_us"})
    r.push_back({f, "every scenario",
                 "times come from the cost profile; NCCL's figures on the link enter the intra lines of `moeplan "
                 "datasheet-profile` only",
                 [](S) { return true; }});
  // FP8 (docs/cost-model.md, "FP8"): the GPU's FP8 abilities say whether it can
  // run a recipe and bound the profile's gemm_fp8 line; times come from the profile.
  r.push_back({"cluster.gpu.peak_tflops_fp8", "scenarios without an FP8 precision",
               "under an FP8 recipe (workload.precision) the FP8 peak is the MFU denominator, says the GPU "
               "runs FP8 GEMMs and bounds the profile's gemm_fp8 line; in BF16 nothing reads it",
               [](S s) { return !is_fp8(s.workload.precision); }});
  r.push_back({"cluster.gpu.mx_formats", "scenarios without precision mxfp8",
               "MX block scaling in the tensor cores is what precision mxfp8 needs; no other precision reads it",
               [](S s) { return s.workload.precision != Precision::Mxfp8; }});
  r.push_back({"profile.gemm_shape.peak_tflops_fp8", "scenarios without an FP8 precision",
               "the GEMM shape model's FP8 peak prices GEMMs with FP8 operands, of which a BF16 scenario has none",
               [](S s) { return !is_fp8(s.workload.precision); }});
  r.push_back({"profile.gemm_shape.product_alpha_ms", "scenarios whose ranks hold one expert each, or none",
               "the launch of each expert's GEMM in a grouped GEMM over a rank's local experts; with one local "
               "expert (num_experts <= ep) or a dense model there is no grouped GEMM",
               [](S s) { return s.model.num_moe_layers() == 0 || s.model.moe.num_experts <= s.parallel.ep; }});
  r.push_back({"cluster.intra_link.ports_per_node", "every scenario",
               "intra-node collectives are priced by the profile's intra lines, per group size",
               [](S) { return true; }});
  for (const char* f : {"schedule.jitter_seeds", "schedule.jitter_seed"})
    r.push_back({f, "scenarios without schedule.compute_jitter_cv",
                 "the seeds of the compute noise, of which there is none (schedule.compute_jitter_cv = 0)",
                 [](S s) { return s.schedule.compute_jitter_cv == 0; }});
  for (const char* f : {"model.ffn_hidden", "model.ffn_type"})
    r.push_back({f, "models whose every block is MoE",
                 "the dense FFN exists only in blocks without experts",
                 [](S s) { return s.model.num_moe_layers() == s.model.num_layers; }});
  // Routing (docs/cost-model.md, "Uneven expert load").
  const auto routing_is = [](S s, Routing which) { return s.workload.routing == which; };
  r.push_back({"workload.routing", "dropless models with ep = 1 unless balanced",
               "with ep = 1 every rank holds every expert and a dropless model computes every slot, so no size "
               "depends on the routing",
               [=](S s) {
                 return !routing_is(s, Routing::Balanced) && s.parallel.ep == 1 && !s.model.moe.capacity_factor;
               }});
  r.push_back({"workload.routing_zipf_s", "routing other than zipf", "the Zipf exponent of routing = zipf",
               [=](S s) { return !routing_is(s, Routing::Zipf); }});
  r.push_back({"workload.routing_histogram_ref", "routing other than histogram",
               "the per-expert token histogram of routing = histogram",
               [=](S s) { return !routing_is(s, Routing::Histogram); }});
  r.push_back({"workload.routing_seed", "routing = balanced",
               "seeds the sampler of zipf and histogram routing; balanced routing is the exact expected load and "
               "draws nothing",
               [=](S s) { return routing_is(s, Routing::Balanced); }});
  r.push_back({"model.moe.shared_expert_ffn_hidden", "models without shared experts",
               "the width of shared experts, of which the model has none (moe.num_shared_experts = 0)",
               [](S s) { return s.model.moe.num_shared_experts == 0; }});
  r.push_back({"model.moe.shared_expert_gate", "models without shared experts",
               "the gate of shared experts, of which the model has none (moe.num_shared_experts = 0)",
               [](S s) { return s.model.moe.num_shared_experts == 0; }});
  // Group-limited routing bounds the nodes and GPUs a token reaches, which
  // only DeepEP's deduplicating dispatch prices (docs/cost-model.md, "DeepEP dispatcher").
  for (const char* f : {"model.moe.num_expert_groups", "model.moe.topk_groups"})
    r.push_back({f, "scenarios without schedule.moe_dispatcher deepep or hybridep and moe.topk_groups",
                 "routing metadata kept from a Hugging Face config: group-limited routing changes no expert's load "
                 "and no AlltoAll's copies (one per routed expert); it bounds the nodes and GPUs a token reaches, "
                 "which only the DeepEP and HybridEP dispatchers price",
                 [](S s) { return !s.schedule.deduplicating_dispatcher() || !s.model.moe.topk_groups; }});
  // Metadata a Hugging Face config carries (docs/formats.md, "import-hf").
  for (const char* f : {"model.moe.routed_scaling_factor", "model.moe.scoring_func"})
    r.push_back({f, "every scenario",
                 "routing metadata kept from a Hugging Face config: the cost model routes token slots over all "
                 "experts (balanced, zipf or histogram), without group limits, and output scaling changes no "
                 "work",
                 [](S) { return true; }});
  return r;
}

std::vector<LabelField> make_labels() {
  const char* named = "a name, carried to outputs";
  const char* described = "a description for people";
  return {
      {"name", named},
      {"description", described},
      {"model.name", named},
      {"model.description", described},
      {"cluster.name", "a name; a profile names the cluster it prices (profile.cluster must match it)"},
      {"cluster.description", described},
      {"cluster.gpu.name", named},
      {"cluster.intra_link.name", named},
      {"cluster.inter_link.name", named},
      {"profile.name", named},
      {"profile.description", described},
      {"profile.costs[*].source", "where the line's numbers come from"},
      {"profile.costs[*].provenance", "how the line was obtained (measured, paper, datasheet)"},
      {"profile.costs[*].r2", "the fit's quality, reported by `fit`; pricing reads alpha and beta"},
      {"profile.costs[*].points", "how many samples the fit used, reported by `fit`"},
      {"profile.cluster", "the cluster the profile prices; must equal cluster.name"},
      {"profile.gemm_shape.source", "where the shape model's numbers come from"},
      {"profile.gemm_shape.provenance", "how the shape model was obtained (measured, paper, datasheet)"},
      {"profile.gemm_shape.r2", "the fit's quality, reported by `calibrate`; pricing reads the model's numbers"},
      {"profile.gemm_shape.points", "how many GEMM points the fit used, reported by `calibrate`"},
      {"profile.attention_shape.source", "where the shape model's numbers come from"},
      {"profile.attention_shape.provenance", "how the shape model was obtained (measured, paper, datasheet)"},
      {"profile.attention_shape.r2", "the fit's quality, reported by `calibrate`; pricing reads the model's numbers"},
      {"profile.attention_shape.points", "how many attention points the fit used, reported by `calibrate`"},
      {"profile.host_issue.source", "where the host-issue model's numbers come from (a fit: its rows)"},
      {"parallelism.dp", "derived: world / (tp x cp x pp); a written value is checked against it"},
      {"parallelism.edp", "derived: world / (etp x ep x pp); a written value is checked against it"},
      {"profile.costs[*].link", "follows from the line's group and ranks_per_node (INTRA: every member on one "
                                "node); a written value is checked against them"},
  };
}

}  // namespace

const std::vector<LabelField>& label_fields() {
  static const std::vector<LabelField> labels = make_labels();
  return labels;
}

const std::vector<OptionRule>& generic_option_rules() {
  static const std::vector<OptionRule> rules = make_rules();
  return rules;
}

std::string option_schema_path(const std::string& path) {
  // Every "[digits]" becomes "[*]" (no <regex>: GCC 12 warns inside it under -O2 with sanitizers).
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    std::size_t j = i + 1;
    while (path[i] == '[' && j < path.size() && std::isdigit(static_cast<unsigned char>(path[j]))) ++j;
    if (path[i] == '[' && j > i + 1 && j < path.size() && path[j] == ']') {
      out += "[*]";
      i = j;
      continue;
    }
    out += path[i];
  }
  return out;
}

namespace {

bool covers(const OptionRule& rule, const std::string& path) {
  return rule.field.back() == '.' ? path.rfind(rule.field, 0) == 0 : path == rule.field;
}

bool contains(const std::vector<std::string>& fields, const std::string& path) {
  return std::find(fields.begin(), fields.end(), path) != fields.end();
}

}  // namespace

std::optional<std::string> inert_option(const ScenarioSpec& scenario, const std::string& field) {
  const std::string path = option_schema_path(field);
  for (const OptionRule& rule : generic_option_rules())
    if (covers(rule, path) && rule.inert(scenario)) return rule.why;
  const FamilyRules* family = find_family_rules(scenario.schedule.family);
  if (family == nullptr) return std::nullopt;  // validation names the unknown family
  bool ruled = false;
  for (const OptionRule& rule : family->option_rules()) {
    if (!covers(rule, path)) continue;
    if (rule.inert(scenario)) return rule.why;
    ruled = true;
  }
  // A field some family reads that this one neither reads nor rules on: a
  // family added later gets its refusals without a rule for every other family's knob.
  if (ruled || contains(family->read_fields(), path)) return std::nullopt;
  std::vector<std::string> readers;
  for (const FamilyRules* f : registered_family_rules())
    if (contains(f->read_fields(), path)) readers.push_back(f->name());
  if (readers.empty()) return std::nullopt;
  return fmt::format("only the {} famil{} read{} it", join_names_and(readers), readers.size() == 1 ? "y" : "ies",
                     readers.size() == 1 ? "s" : "");
}

void check_options(const ScenarioSpec& scenario) {
  for (const std::string& field : scenario.options)
    if (const auto why = inert_option(scenario, field))
      throw_input_error(field, fmt::format("cannot act on this {} scenario: {} (docs/formats.md, options)",
                                           scenario.schedule.family, *why));
}

namespace {

// A family's rules of one field and why, merged over families: "foldmoe, fsmoe;
// folding when pp is 1" (families with the same condition share it).
struct MergedRule {
  std::string field;
  std::string why;
  std::vector<std::pair<std::string, std::vector<std::string>>> where;  // condition -> families
};

std::vector<MergedRule> merged_family_rules() {
  std::vector<MergedRule> out;
  for (const FamilyRules* family : registered_family_rules())
    for (const OptionRule& rule : family->option_rules()) {
      auto m = std::find_if(out.begin(), out.end(),
                            [&](const MergedRule& x) { return x.field == rule.field && x.why == rule.why; });
      if (m == out.end()) m = out.insert(out.end(), MergedRule{rule.field, rule.why, {}});
      auto w = std::find_if(m->where.begin(), m->where.end(), [&](const auto& x) { return x.first == rule.where; });
      if (w == m->where.end()) w = m->where.insert(m->where.end(), {rule.where, {}});
      w->second.push_back(family->name());
    }
  return out;
}

}  // namespace

std::string option_rules_markdown() {
  std::string out = "| option | cannot act on | why |\n|---|---|---|\n";
  for (const OptionRule& rule : generic_option_rules())
    out += fmt::format("| `{}` | {} | {} |\n", rule.field, rule.where, rule.why);
  for (const MergedRule& rule : merged_family_rules()) {
    std::string where;
    for (const auto& [condition, families] : rule.where)
      where += (where.empty() ? "" : "; ") + join_names(families) + (condition.empty() ? "" : " " + condition);
    out += fmt::format("| `{}` | {} | {} |\n", rule.field, where, rule.why);
  }
  out += "\n| label | what it is |\n|---|---|\n";
  for (const LabelField& label : label_fields()) out += fmt::format("| `{}` | {} |\n", label.field, label.why);
  return out;
}

}  // namespace moeplan::model
