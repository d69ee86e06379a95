#include <moeplan/model/options.hpp>

#include <cctype>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::model {
namespace {

bool family_is(const ScenarioSpec& s, std::initializer_list<const char*> families) {
  for (const char* f : families)
    if (s.schedule.family == f) return true;
  return false;
}

// Megatron-Core's default rank order (docs/formats.md, parallelism.order).
constexpr const char* kDefaultOrder = "tp-cp-ep-dp-pp";

std::vector<OptionRule> make_rules() {
  using S = const ScenarioSpec&;
  std::vector<OptionRule> r;
  // Schedule knobs belong to one family's schedule builders and planner.
  r.push_back({"schedule.name", "folding",
               "the folding planner searches mappings and runs no named schedule",
               [](S s) { return family_is(s, {"folding"}); }});
  r.push_back({"schedule.degree", "folding",
               "a per-layer overlap degree of the FoldMoE, FSMoE and FlowMoE schedules; folding pipelines over pp, vpp",
               [](S s) { return family_is(s, {"folding"}); }});
  for (const char* f : {"schedule.degree_forward", "schedule.degree_backward"})
    r.push_back({f, "foldmoe, flowmoe, folding",
                 "FSMoE's per-phase pipeline degrees r_f and r_b; other families take one degree",
                 [](S s) { return !family_is(s, {"fsmoe"}); }});
  r.push_back({"schedule.slicing", "fsmoe, flowmoe, folding",
               "FoldMoE's attention slices (token counts of each slice)",
               [](S s) { return !family_is(s, {"foldmoe"}); }});
  r.push_back({"schedule.ar_chunk_bytes", "foldmoe, fsmoe, folding",
               "FlowMoE's all-reduce chunk size Sp",
               [](S s) { return !family_is(s, {"flowmoe"}); }});
  r.push_back({"schedule.fsmoe_released_solver_rules", "foldmoe, flowmoe, folding",
               "a rule set of FSMoE's degree solver",
               [](S s) { return !family_is(s, {"fsmoe"}); }});
  r.push_back({"schedule.mode", "folding",
               "the FoldMoE, FSMoE and FlowMoE schedules build a graph with one rank per GPU (multi_rank); folding "
               "prices mappings in closed form",
               [](S s) { return family_is(s, {"folding"}); }});
  for (const char* f : {"schedule.slow_ranks_compute_factor", "schedule.slow_ranks_fraction"})
    r.push_back({f, "folding; foldmoe, fsmoe, flowmoe in symmetric mode",
                 "a straggler slows some ranks, which needs a graph with one rank per GPU: FoldMoE, FSMoE or FlowMoE "
                 "in multi_rank mode",
                 [](S s) { return family_is(s, {"folding"}) || !s.schedule.multi_rank; }});
  // Pipeline parallelism and rank order are mapped by the folding planner only;
  // the layer schedules of the other families run one stage holding every layer.
  r.push_back({"parallelism.pp", "foldmoe, fsmoe, flowmoe when pp is not 1",
               "the FoldMoE, FSMoE and FlowMoE schedules run every layer on one pipeline stage",
               [](S s) { return !family_is(s, {"folding"}) && s.parallel.pp != 1; }});
  r.push_back({"parallelism.vpp", "foldmoe, fsmoe, flowmoe when vpp is not 1",
               "virtual pipeline stages are mapped by the folding planner only",
               [](S s) { return !family_is(s, {"folding"}) && s.parallel.vpp != 1; }});
  r.push_back({"parallelism.order", "foldmoe, fsmoe, flowmoe when not tp-cp-ep-dp-pp",
               "the FoldMoE, FSMoE and FlowMoE schedules place groups in Megatron's default order",
               [](S s) { return !family_is(s, {"folding"}) && s.parallel.order != kDefaultOrder; }});
  r.push_back({"schedule.recompute", "foldmoe, fsmoe, flowmoe",
               "activation recomputation enters folding's memory check; the other families' schedules time "
               "no recomputation",
               [](S s) { return !family_is(s, {"folding"}); }});
  // Sequence parallelism splits activations over the tp group.
  // (With tp = 1 it splits by one: true and false are the same, as in Megatron-LM, which turns it off.)
  r.push_back({"parallelism.sequence_parallel", "folding when false",
               "folding prices Megatron-Core's MoE layers, which require sequence parallelism whenever tp > 1",
               [](S s) { return family_is(s, {"folding"}) && !s.parallel.sequence_parallel; }});
  // Hardware: every time comes from the scenario's cost profile.
  r.push_back({"cluster.gpu.memory_gib", "foldmoe, fsmoe, flowmoe",
               "times come from the cost profile; the GPU's memory enters folding's memory check only",
               [](S s) { return !family_is(s, {"folding"}); }});
  // Folding's MFU divides by the peak of the model's datatype (plan/folding.cpp).
  r.push_back({"cluster.gpu.peak_tflops_fp32", "foldmoe, fsmoe, flowmoe; folding with 2-byte elements",
               "times come from the cost profile; the peak enters folding's MFU, for 4-byte elements only",
               [](S s) { return !family_is(s, {"folding"}) || s.model.dtype_bytes != 4; }});
  r.push_back({"cluster.gpu.peak_tflops_bf16", "foldmoe, fsmoe, flowmoe; folding with 4-byte elements",
               "times come from the cost profile; the peak enters folding's MFU, for 2-byte elements only",
               [](S s) { return !family_is(s, {"folding"}) || s.model.dtype_bytes == 4; }});
  r.push_back({"cluster.gpu.peak_tflops_fp16", "foldmoe, fsmoe, flowmoe; folding unless 2-byte elements on a GPU "
               "without BF16",
               "times come from the cost profile; folding's MFU reads the FP16 peak only for 2-byte elements on a "
               "GPU without a BF16 peak",
               [](S s) {
                 return !family_is(s, {"folding"}) || s.model.dtype_bytes == 4 ||
                        s.cluster.gpu.peak_flops_per_s_bf16 > 0;
               }});
  for (const char* f : {"cluster.intra_link.bandwidth_gbit_s", "cluster.inter_link.bandwidth_gbit_s"})
    r.push_back({f, "every scenario",
                 "times come from the cost profile (derive one from the cluster with `moeplan "
                 "datasheet-profile`, or fit one with `moeplan fit`)",
                 [](S) { return true; }});
  for (const char* f : {"cluster.gpu.sm_count", "cluster.gpu.memory_gbytes_per_s", "cluster.gpu.gemm_tile_m",
                        "cluster.gpu.gemm_tile_n"})
    r.push_back({f, "every scenario",
                 "times come from the cost profile; these enter the GEMM shape model of `moeplan "
                 "datasheet-profile` only",
                 [](S) { return true; }});
  r.push_back({"cluster.intra_link.ports_per_node", "every scenario",
               "intra-node collectives are priced by the profile's intra lines, per group size",
               [](S) { return true; }});
  // The engine slows compute while communication of its rank runs; folding's
  // pipeline overlaps only its stage-to-stage P2P transfers with compute.
  r.push_back({"profile.overlap_compute_slowdown", "folding when pp is 1",
               "folding prices a layer's collectives as exposed and overlaps only the P2P transfers between pipeline "
               "stages with compute; with pp = 1 there are none",
               [](S s) { return family_is(s, {"folding"}) && s.parallel.pp == 1; }});
  r.push_back({"profile.overlap_comm_slowdown", "folding when pp is 1",
               "folding prices a layer's collectives as exposed and overlaps only the P2P transfers between pipeline "
               "stages with compute; with pp = 1 there are none",
               [](S s) { return family_is(s, {"folding"}) && s.parallel.pp == 1; }});
  // Noise is a question simulate answers (mean and p95 over seeds) for the layer schedules.
  r.push_back({"schedule.compute_jitter_cv", "folding",
               "noise on compute tasks is simulated for the FoldMoE, FSMoE and FlowMoE schedules; folding prices each "
               "mapping once",
               [](S s) { return family_is(s, {"folding"}); }});
  for (const char* f : {"schedule.jitter_seeds", "schedule.jitter_seed"})
    r.push_back({f, "scenarios without schedule.compute_jitter_cv",
                 "the seeds of the compute noise, of which there is none (schedule.compute_jitter_cv = 0)",
                 [](S s) { return s.schedule.compute_jitter_cv == 0; }});
  // Model parts the layer schedules do not contain.
  for (const char* f : {"model.vocab_size", "model.max_position_embeddings"})
    r.push_back({f, "foldmoe, fsmoe, flowmoe",
                 "the FoldMoE, FSMoE and FlowMoE schedules time the transformer blocks, not the embedding and "
                 "output layer; folding counts them",
                 [](S s) { return !family_is(s, {"folding"}); }});
  r.push_back({"model.tie_embeddings", "foldmoe, fsmoe, flowmoe; folding when pp > 1",
               "the FoldMoE, FSMoE and FlowMoE schedules time the transformer blocks only; with pp > 1 Megatron "
               "keeps the tied output weights on the last stage, so tying changes no stage's memory",
               [](S s) { return !family_is(s, {"folding"}) || s.parallel.pp > 1; }});
  for (const char* f : {"model.norm_type", "model.qkv_bias"})
    r.push_back({f, "foldmoe, fsmoe, flowmoe",
                 "norm and Q/K/V bias parameters are not in the layer schedules' compute or gradients (each under "
                 "0.1% of a block's parameters); folding counts them in memory",
                 [](S s) { return !family_is(s, {"folding"}); }});
  for (const char* f : {"model.ffn_hidden", "model.ffn_type"})
    r.push_back({f, "models whose every block is MoE",
                 "the dense FFN exists only in blocks without experts",
                 [](S s) { return s.model.num_moe_layers() == s.model.num_layers; }});
  // FSMoE's and FlowMoE's builders make every block an MoE block, as in their papers' models.
  for (const char* f : {"model.moe.moe_layer_interval", "model.moe.moe_layer_offset", "model.moe.moe_layers",
                        "model.moe.first_k_dense"})
    r.push_back({f, "fsmoe, flowmoe",
                 "the FSMoE and FlowMoE schedules build every block as an MoE block (the papers' models); a model "
                 "with dense blocks is refused on them",
                 [](S s) { return family_is(s, {"fsmoe", "flowmoe"}); }});
  r.push_back({"parallelism.etp", "flowmoe when etp is not 1",
               "FlowMoE's schedule splits experts over ep only (its paper runs expert and data parallelism)",
               [](S s) { return family_is(s, {"flowmoe"}) && s.parallel.etp != 1; }});
  r.push_back({"workload.global_batch_size", "flowmoe when it is not micro_batch_size x dp",
               "FlowMoE's schedule runs one micro-batch per rank per iteration",
               [](S s) { return family_is(s, {"flowmoe"}) && s.workload.micro_batches_per_rank(s.parallel.dp) != 1; }});
  // Routing (docs/cost-model.md, "Uneven expert load"): the layer schedules'
  // builders take it; folding's planner prices the expected, balanced load.
  const auto routing_is = [](S s, Routing which) { return s.workload.routing == which; };
  r.push_back({"workload.routing", "folding unless balanced; dropless models with ep = 1",
               "folding's planner prices the balanced (expected) load; with ep = 1 every rank holds every expert and "
               "a dropless model computes every slot, so no size depends on the routing",
               [=](S s) {
                 if (routing_is(s, Routing::Balanced)) return false;
                 return family_is(s, {"folding"}) || (s.parallel.ep == 1 && !s.model.moe.capacity_factor);
               }});
  r.push_back({"workload.routing_zipf_s", "routing other than zipf; folding",
               "the Zipf exponent of routing = zipf",
               [=](S s) { return !routing_is(s, Routing::Zipf) || family_is(s, {"folding"}); }});
  r.push_back({"workload.routing_histogram_ref", "routing other than histogram; folding",
               "the per-expert token histogram of routing = histogram",
               [=](S s) { return !routing_is(s, Routing::Histogram) || family_is(s, {"folding"}); }});
  r.push_back({"workload.routing_seed", "routing = balanced; folding",
               "seeds the sampler of zipf and histogram routing; balanced routing is the exact expected load and "
               "draws nothing",
               [=](S s) { return routing_is(s, Routing::Balanced) || family_is(s, {"folding"}); }});
  r.push_back({"model.moe.shared_expert_ffn_hidden", "models without shared experts",
               "the width of shared experts, of which the model has none (moe.num_shared_experts = 0)",
               [](S s) { return s.model.moe.num_shared_experts == 0; }});
  r.push_back({"model.moe.shared_expert_gate", "foldmoe, fsmoe, flowmoe; models without shared experts",
               "Qwen2-MoE's d_model x 1 gate on the shared experts' output is not in the layer schedules' compute or "
               "gradients (under 0.01% of a block's parameters); folding counts it in memory",
               [](S s) { return !family_is(s, {"folding"}) || s.model.moe.num_shared_experts == 0; }});
  // Metadata a Hugging Face config carries (docs/formats.md, "import-hf").
  for (const char* f : {"model.moe.routed_scaling_factor", "model.moe.num_expert_groups", "model.moe.topk_groups",
                        "model.moe.scoring_func"})
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

const std::vector<OptionRule>& option_rules() {
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

std::optional<std::string> inert_option(const ScenarioSpec& scenario, const std::string& field) {
  const std::string path = option_schema_path(field);
  for (const OptionRule& rule : option_rules()) {
    const bool covers = rule.field.back() == '.' ? path.rfind(rule.field, 0) == 0 : path == rule.field;
    if (covers && rule.inert(scenario)) return rule.why;
  }
  return std::nullopt;
}

void check_options(const ScenarioSpec& scenario) {
  for (const std::string& field : scenario.options)
    if (const auto why = inert_option(scenario, field))
      throw_input_error(field, fmt::format("cannot act on this {} scenario: {} (docs/formats.md, options)",
                                           scenario.schedule.family, *why));
}

std::string option_rules_markdown() {
  std::string out = "| option | cannot act on | why |\n|---|---|---|\n";
  for (const OptionRule& rule : option_rules()) out += fmt::format("| `{}` | {} | {} |\n", rule.field, rule.where, rule.why);
  out += "\n| label | what it is |\n|---|---|\n";
  for (const LabelField& label : label_fields()) out += fmt::format("| `{}` | {} |\n", label.field, label.why);
  return out;
}

}  // namespace moeplan::model
