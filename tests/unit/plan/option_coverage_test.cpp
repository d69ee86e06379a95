// Every scenario field acts or is refused (issue 13, "make the class
// impossible"). For one bundled scenario per family, every scalar field of the
// resolved scenario (its model, cluster and profile in place) is perturbed
// through --set (x2, +1, /2, -1, the other enum values, the other choices of
// a named field) until a perturbation loads; the field passes when the result
// changes, when validation refuses it because model::option_rules() says it
// cannot act there, or when model::label_fields() lists it as a label. A field
// that loads, changes nothing and is in neither table fails: that is an option
// which would be silently ignored (the class of bugs behind issue 13's items 1
// and 2: slow ranks ignored by simulate, --schedule ignored on folding).

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/scenario_fields.hpp>
#include <moeplan/model/family_rules.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/plan/open_knobs.hpp>
#include <moeplan/plan/mapping_run.hpp>
#include <moeplan/model/options.hpp>
#include <moeplan/model/pipeline_layout.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace {

using moeplan::io::Override;
using moeplan::io::ScenarioField;

// Everything a command reports about the scenario's own knobs: each schedule of
// the family simulated (simulate --schedule all), or the folding mapping priced.
std::string result_of(const moeplan::model::ScenarioSpec& spec) {
  const moeplan::plan::ScenarioRun run(spec);
  // simulate without --schedule runs the scenario's own schedule
  std::string out = spec.schedule.name + ";";
  if (run.family().searches_mappings()) {
    const moeplan::plan::MappingResult r = moeplan::plan::price_mapping(
        spec, run.costs(), moeplan::cost::MappingConfig::from(spec.parallel, spec.workload.micro_batch_size));
    const moeplan::plan::MappingBreakdown& b = r.breakdown;
    // What the planner prices each mapping with (schedule.search opens
    // precision and recomputation to plan; simulate refuses it).
    std::string open;
    for (const auto& ladder : moeplan::plan::open_knobs(spec).by_precision)
      for (const moeplan::model::ScenarioSpec& v : ladder)
        open += fmt::format(" {}/{}", moeplan::model::to_string(v.workload.precision),
                            moeplan::model::recompute_text(v.schedule.recompute));
    return fmt::format("{} {} {} {} {} {} {} {} {} {} {} {}{}", r.iteration_ms, r.mfu, r.memory_bytes_per_gpu, r.fits,
                       b.attention_ms, b.moe_compute_ms, b.a2a_ms, b.agrs_ms, b.dp_ms, b.pp_bubble_ms,
                       b.recompute_ms, b.host_wait_ms, open);
  }
  for (const moeplan::plan::RequestedSchedule& s : run.schedules("all")) {
    if (s.skipped_because) continue;
    const moeplan::plan::Evaluation e = moeplan::plan::evaluate(run.build(s.name));
    out += fmt::format("{}: {} {} {} {} {} {} {} {} {} {} {} {} {};", s.name, e.degree, e.iteration_ms, e.forward_ms,
                       e.backward_ms, e.compute_ms, e.comm_ms, e.exposed_comm_ms, e.bubble_ms, e.tasks, e.a2a_total_ms,
                       e.a2a_critical_ms, e.attention_flops_forward, e.attention_flops_backward);
    // simulate's noise summary (schedule.compute_jitter_cv > 0)
    if (const moeplan::plan::Noise noise = moeplan::plan::noise_of(spec); noise.compute_jitter_cv > 0) {
      const moeplan::plan::NoiseSummary n = moeplan::plan::run_with_noise(run.build(s.name), noise);
      out += fmt::format("noise {} {} {} {};", n.mean_ms, n.p95_ms, n.min_ms, n.max_ms);
    }
    // Uneven expert load: with capacity buffers it changes the dropped tokens, not the times.
    if (const auto r = run.routing_report(run.build(s.name))) {
      out += fmt::format("routing {} {}", r->dropped_token_fraction, r->slowest_rank);
      for (double ms : r->per_rank_a2a_ms) out += fmt::format(" {}", ms);
      out += ";";
    }
  }
  return out;
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    out.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

// Values a field of this type can take that differ from its value.
std::vector<std::string> perturbations(const ScenarioField& f, const std::string& family,
                                       const moeplan::model::ScenarioSpec& base) {
  // Named choices: the other schedules of the family, modes, orders, recompute levels.
  static const std::map<std::string, std::vector<std::string>> named = {
      {"schedule.mode", {"multi_rank", "symmetric"}},
      {"schedule.recompute", {"none", "full", "selective"}},
      {"schedule.search", {"recompute", "precision"}},
      {"schedule.attention_backend", {"unfused", "flash"}},
      // Megatron-FSDP, then the distributed optimizer (the default).
      {"schedule.data_parallel_sharding_strategy", {"optim_grads_params", "optim"}},
      {"schedule.moe_dispatcher", {"deepep", "hybridep", "alltoall"}},
      {"schedule.cross_entropy_fusion", {"te", "none"}},
      // CUDA graphs: the attention part, all three parts, the whole iteration, none.
      {"schedule.cuda_graphs", {"attn", "attn+moe_router+moe_preprocess", "full_iteration", "none"}},
      {"schedule.optimizer_moments_dtype", {"bf16", "fp32"}},
      {"schedule.master_weights", {"none", "fp32"}},
      // An FP8 recipe, then mxfp8 (needs Blackwell's MX tensor cores), then the default.
      {"workload.precision", {"fp8_tensorwise", "fp8_delayed", "mxfp8", "bf16"}},
      {"schedule.family", {"foldmoe", "fsmoe", "flowmoe", "folding"}},
      {"parallelism.order", {"tp-cp-dp-ep-pp", "tp-ep-cp-dp-pp"}},
      {"workload.routing", {"zipf", "histogram", "balanced"}},
      // The bundled 16-expert histogram (scenarios/routing/); acts with routing = histogram only.
      {"workload.routing_histogram_ref", {"zipf1-16-experts"}},
      {"model.moe.scoring_func", {"softmax", "sigmoid"}},
      // FlowMoE's Sp: 256 KiB and 4 MiB, chunk sizes a user sets. The generic
      // small integers (1 to 8 bytes) make millions of all-reduce chunks: 1 byte
      // made 12.8 M tasks and took 250 s of the sanitizer suite.
      {"schedule.ar_chunk_bytes", {"262144", "4194304"}},
  };
  std::vector<std::string> out;
  if (f.path == "schedule.name") {
    out = moeplan::model::family_rules(family).schedules();
    out.push_back("none");
  } else if (f.path == "schedule.slicing") {
    // Two slices of the sequence, even and uneven (the slices hold seq_len tokens).
    const std::int64_t l = base.workload.seq_len;
    out = {fmt::format("{},{}", l / 2, l / 2), fmt::format("{},{}", l / 4, l - l / 4)};
  } else if (f.path == "parallelism.pipeline_layout") {
    // The scenario's own stages, unevenly: one block moved from the first
    // stage to the last (one stage, pp = 1: the same split written out).
    const std::int64_t stages = base.parallel.pp * base.parallel.vpp;
    std::vector<std::int64_t> layers(static_cast<std::size_t>(stages), base.model.num_layers / stages);
    if (stages > 1) {
      --layers.front();
      ++layers.back();
    }
    out = {moeplan::model::pipeline_layout_text(layers)};
  } else if (f.schema_path == "profile.costs[*].kernel") {
    // The kernels a line may name (an ELEMENTWISE line's: Transformer Engine's
    // fused loss, Megatron-Core DDP's gradient buffer passes).
    out = {"fused_cross_entropy", "gradient_buffer"};
  } else if (const auto it = named.find(f.path); it != named.end()) {
    out = it->second;
  } else if (f.type == ScenarioField::Type::Enum) {
    out = f.choices;
  } else if (f.type == ScenarioField::Type::Boolean) {
    out = {"true", "false"};
  } else if (f.type == ScenarioField::Type::Integer && f.repeated) {
    if (f.value) {
      std::vector<std::string> doubled;
      for (const std::string& v : split_list(*f.value)) doubled.push_back(std::to_string(2 * std::stoll(v)));
      out = {join(doubled)};
    } else {
      out = {"0", "1", "0,1"};
    }
  } else if (f.type == ScenarioField::Type::Integer) {
    if (f.value) {
      const long long v = std::stoll(*f.value);
      out = {std::to_string(2 * v), std::to_string(v + 1)};
      if (v >= 2) out.insert(out.end(), {std::to_string(v / 2), std::to_string(v - 1)});
      if (v == 0) out.push_back("2");
    } else {
      out = {"1", "2", "4", "8", "3"};
    }
  } else if (f.type == ScenarioField::Type::Real) {
    if (f.value) {
      const double v = std::stod(*f.value);
      out = {fmt::format("{}", 2 * v), fmt::format("{}", v / 2), fmt::format("{}", 1.1 * v)};
      if (v == 0) out = {"0.5", "1", "2"};
    } else {
      out = {"0.5", "1", "2", "1.5"};
    }
  }
  std::erase_if(out, [&](const std::string& v) { return f.value && v == *f.value; });
  return out;
}

// One perturbation: `with` applied on top of `context`, compared with `context` alone.
struct Candidate {
  std::vector<Override> with;
  std::vector<Override> context;
};

// Fields that cannot change alone (the products tp*cp*dp*pp and etp*ep*edp*pp
// must equal the world size, a batch must split over dp): each moves with the
// fields it is tied to, chosen by hand from the scenario's own sizes.
using Compounds = std::map<std::string, std::vector<Candidate>>;

Compounds compounds_for(const std::string& scenario) {
  auto o = [](const char* f, const char* v) { return Override{f, v}; };
  // Dense blocks need a dense FFN width: a model of MoE blocks only has none.
  const Compounds layers = {
      {"model.moe.moe_layer_interval", {{{o("model.moe.moe_layer_interval", "2"), o("model.ffn_hidden", "4096")}, {}}}},
      {"model.moe.moe_layer_offset",
       {{{o("model.moe.moe_layer_interval", "2"), o("model.moe.moe_layer_offset", "1"), o("model.ffn_hidden", "4096")},
         {}}}},
      {"model.moe.moe_layers", {{{o("model.moe.moe_layers", "0"), o("model.ffn_hidden", "4096")}, {}}}},
  };
  Compounds c;
  if (scenario == "foldmoe-gpt-moe-m-16k") {  // 2 nodes x 8; tp 8, dp 2, ep 16, etp 1; 16 experts; batch 2
    const Override dp4 = o("parallelism.dp", "4"), batch4 = o("workload.global_batch_size", "4");
    c = {{"cluster.num_nodes", {{{o("cluster.num_nodes", "4"), dp4, batch4}, {}}}},
         {"cluster.gpus_per_node", {{{o("cluster.gpus_per_node", "16"), dp4, batch4}, {}}}},
         {"parallelism.tp", {{{o("parallelism.tp", "4"), dp4, batch4}, {}}}},
         {"parallelism.etp", {{{o("parallelism.etp", "2"), o("parallelism.ep", "8")}, {}}}},
         {"parallelism.cp", {{{o("parallelism.cp", "2"), o("parallelism.dp", "1")}, {}}}},
         {"parallelism.pp", {{{o("parallelism.pp", "2"), o("parallelism.dp", "1"), o("parallelism.ep", "8")}, {}}}},
         {"parallelism.vpp",
          {{{o("parallelism.pp", "2"), o("parallelism.vpp", "3"), o("parallelism.dp", "1"), o("parallelism.ep", "8")},
            {}}}},
         {"model.num_kv_heads", {{{o("model.num_kv_heads", "4")}, {o("parallelism.tp", "4"), dp4, batch4}}}},
         {"workload.micro_batch_size",
          {{{o("workload.micro_batch_size", "2"), o("workload.global_batch_size", "4")}, {}}}}};
  } else if (scenario == "fsmoe-testbed-b-gpt2-xl") {  // 8 nodes x 4; tp 4, dp 8, ep 8, etp 4, edp 1
    const Override batch64 = o("workload.global_batch_size", "64");
    c = {{"cluster.num_nodes",
          {{{o("cluster.num_nodes", "16"), o("parallelism.dp", "16"), o("parallelism.edp", "2"), batch64}, {}}}},
         {"cluster.gpus_per_node",
          {{{o("cluster.gpus_per_node", "8"), o("parallelism.tp", "8"), o("parallelism.etp", "8")}, {}}}},
         {"parallelism.tp", {{{o("parallelism.tp", "2"), o("parallelism.dp", "16"), batch64}, {}}}},
         {"parallelism.ep", {{{o("parallelism.ep", "4"), o("parallelism.edp", "2")}, {}}}},
         {"parallelism.etp", {{{o("parallelism.etp", "2"), o("parallelism.edp", "2")}, {}}}},
         {"parallelism.cp", {{{o("parallelism.cp", "2"), o("parallelism.dp", "4")}, {}}}},
         {"parallelism.pp", {{{o("parallelism.pp", "2"), o("parallelism.dp", "4"), o("parallelism.ep", "4")}, {}}}},
         {"parallelism.vpp",
          {{{o("parallelism.pp", "2"), o("parallelism.vpp", "2"), o("parallelism.dp", "4"), o("parallelism.ep", "4")},
            {}}}}};
  } else if (scenario == "flowmoe-gpt2-tiny-moe-c1") {  // 2 nodes x 8; dp 16, ep 16; micro-batch 4
    c = {{"cluster.num_nodes", {{{o("cluster.num_nodes", "4"), o("parallelism.dp", "32")}, {}}}},
         {"cluster.gpus_per_node", {{{o("cluster.gpus_per_node", "16"), o("parallelism.dp", "32")}, {}}}},
         {"parallelism.tp", {{{o("parallelism.tp", "2"), o("parallelism.dp", "8"), o("parallelism.etp", "1")}, {}}}},
         {"parallelism.etp", {{{o("parallelism.etp", "2"), o("parallelism.ep", "8")}, {}}}},
         {"parallelism.cp", {{{o("parallelism.cp", "2"), o("parallelism.dp", "8")}, {}}}},
         {"parallelism.pp", {{{o("parallelism.pp", "2"), o("parallelism.dp", "8"), o("parallelism.ep", "8")}, {}}}},
         {"parallelism.vpp",
          {{{o("parallelism.pp", "2"), o("parallelism.vpp", "2"), o("parallelism.dp", "8"), o("parallelism.ep", "8")},
            {}}}},
         {"workload.global_batch_size", {{{o("workload.global_batch_size", "128")}, {}}}},
         // Sequence parallelism splits over tp: with tp = 1 it splits by one.
         {"parallelism.sequence_parallel",
          {{{o("parallelism.sequence_parallel", "true")},
            {o("parallelism.tp", "2"), o("parallelism.dp", "8"), o("parallelism.etp", "1")}}}}};
  }
  if (scenario == "folding-llama3-70b-64") {  // 8 nodes x 8; tp 8, pp 4, dp 2; dense (ep 1, etp = tp)
    // With tp 8 every order leaves the pipeline and data-parallel pairs across
    // nodes; at tp 4 the order puts one or the other inside a node.
    c = {{"parallelism.order", {{{o("parallelism.order", "tp-cp-ep-pp-dp")}, {o("parallelism.tp", "4")}}}}};
  }
  for (const auto& [field, candidates] : layers) c[field] = candidates;
  // Dropless routing of balanced tokens is capacity factor 1 (docs/cost-model.md): it acts beside another factor.
  c["model.moe.dropless"] = {{{o("model.moe.dropless", "true")}, {o("model.moe.capacity_factor", "1.5")}}};
  // A GLU clamp (GPT-OSS) needs gated experts: the papers' GPT-MoE models are GELU.
  c["model.moe.glu_clamp"] = {{{o("model.moe.glu_clamp", "7"), o("model.moe.expert_type", "SWIGLU")}, {}}};
  // Zipf routing needs its exponent.
  c["workload.routing"] = {{{o("workload.routing", "zipf"), o("workload.routing_zipf_s", "1.2")}, {}}};
  // The first blocks dense (DeepSeek's first_k_dense_replace) need a dense FFN width.
  c["model.moe.first_k_dense"] = {{{o("model.moe.first_k_dense", "1"), o("model.ffn_hidden", "4096")}, {}}};
  // A sliding window needs its blocks, and its blocks a window.
  for (const char* f : {"model.sliding_window", "model.sliding_window_layers"})
    c[f] = {{{o("model.sliding_window", "64"), o("model.sliding_window_layers", "0")}, {}}};
  // Recomputed modules act under selective: one the
  // model has (moe_act and moe on MoE models, mlp on dense ones; layernorm
  // where the profile prices element-wise kernels). The method and the layer
  // count act under full: the block method keeps every block of a chunk but
  // the first, and groups of two blocks keep half the inputs.
  for (const char* module : {"moe_act", "moe", "mlp", "layernorm"})
    c["schedule.recompute_modules"].push_back(
        {{o("schedule.recompute_modules", module)}, {o("schedule.recompute", "selective")}});
  c["schedule.recompute_method"] = {{{o("schedule.recompute_method", "block")}, {o("schedule.recompute", "full")}}};
  c["schedule.recompute_num_layers"] = {
      {{o("schedule.recompute_num_layers", "2")}, {o("schedule.recompute", "full")}}};
  // Chunked attention needs its blocks, and its blocks a chunk size.
  for (const char* f : {"model.attention_chunk_size", "model.attention_chunk_layers"})
    c[f] = {{{o("model.attention_chunk_size", "64"), o("model.attention_chunk_layers", "0")}, {}}};
  // A CP exchange acts with cp > 1: the scenario's cp, else twice it with
  // half the dp (allgather, which splits no heads). The hierarchical sizes act
  // with a2a+p2p, against allgather: 1 x cp is the ring.
  {
    const moeplan::model::ScenarioSpec base = moeplan::io::load_scenario(scenario);
    const std::int64_t cp = base.parallel.cp, dp = base.parallel.dp;
    const auto text = [](std::int64_t n) { return std::to_string(n); };
    std::vector<Candidate>& type = c["parallelism.cp_comm_type"];
    std::vector<Candidate>& sizes = c["parallelism.hierarchical_cp_sizes"];
    type.push_back({{o("parallelism.cp_comm_type", "allgather")}, {}});
    sizes.push_back({{o("parallelism.cp_comm_type", "a2a+p2p"), Override{"parallelism.hierarchical_cp_sizes", "1," + text(cp)}},
                     {o("parallelism.cp_comm_type", "allgather")}});
    if (dp % 2 == 0) {
      const std::vector<Override> wider{Override{"parallelism.cp", text(2 * cp)}, Override{"parallelism.dp", text(dp / 2)}};
      type.push_back({{o("parallelism.cp_comm_type", "allgather")}, wider});
      std::vector<Override> against = wider;
      against.push_back(o("parallelism.cp_comm_type", "allgather"));
      sizes.push_back({{o("parallelism.cp_comm_type", "a2a+p2p"),
                        Override{"parallelism.hierarchical_cp_sizes", "1," + text(2 * cp)}},
                       against});
    }
  }
  // DeepEP sends a token once per destination GPU: it acts where a rank holds
  // several of a token's possible experts and the EP group fits DeepEP's
  // placement (one node, or 8 ranks on each): ep 4 on one node at tp 2.
  // bf16 Adam moments are the precision-aware optimizer's choice.
  c["schedule.optimizer_moments_dtype"] = {
      {{o("schedule.optimizer_moments_dtype", "bf16")}, {o("schedule.precision_aware_optimizer", "true")}}};
  // Going without master weights is Megatron-FSDP's choice (optim_grads_params).
  c["schedule.master_weights"] = {
      {{o("schedule.master_weights", "none")}, {o("schedule.data_parallel_sharding_strategy", "optim_grads_params")}}};
  // Transformer Engine's fused grouped MLP runs MXFP8 grouped GEMMs: it acts
  // on Blackwell (DGX B200 and its datasheet profile) under mxfp8.
  c["schedule.fused_grouped_mlp"] = {{{o("schedule.fused_grouped_mlp", "true")},
                                      {o("cluster_ref", "dgx-b200"), o("profile_ref", "dgx-b200-datasheet"),
                                       o("workload.precision", "mxfp8")}}};
  c["schedule.moe_dispatcher"] = {
      {{o("schedule.moe_dispatcher", "deepep")}, {o("parallelism.tp", "2"), o("parallelism.ep", "4")}}};
  // The host-issue model's parts are required together: a profile without one
  // (fp32 datasheet profiles) gets all four.
  for (const char* part : {"attention_ms", "router_ms", "moe_ms", "local_expert_ms"}) {
    std::vector<Override> all;
    for (const char* p : {"attention_ms", "router_ms", "moe_ms", "local_expert_ms"})
      all.push_back(Override{std::string("profile.host_issue.") + p, std::string(p) == part ? "3" : "1"});
    c[std::string("profile.host_issue.") + part] = {{all, {}}};
  }
  // Group-limited routing picks among the expert groups: one group of every expert.
  c["model.moe.topk_groups"] = {{{o("model.moe.num_expert_groups", "1"), o("model.moe.topk_groups", "1")}, {}}};

  return c;
}

// A profile line is found by its key (op, link, group, placement): a key field
// acts when two lines swap it, so that each prices what the other did.
std::vector<Candidate> key_swaps(const ScenarioField& f, const std::vector<ScenarioField>& all) {
  // The keys of a profile's lines and of a GPU's fused attention rates: one
  // entry per key, so a new value alone collides with another entry's.
  static const std::set<std::string> keys = {"op",        "link",     "group", "ranks_per_node", "concurrent_groups",
                                             "attention_pass", "head_dim", "pass"};
  if ((f.path.rfind("profile.costs[", 0) != 0 && f.path.rfind("cluster.gpu.fused_attention[", 0) != 0) || !f.value)
    return {};
  const std::string key = f.path.substr(f.path.find("].") + 2);
  if (!keys.count(key)) return {};
  std::vector<Candidate> out;
  for (const ScenarioField& other : all)
    if (other.schema_path == f.schema_path && other.path != f.path && other.value && *other.value != *f.value)
      out.push_back({{Override{f.path, *other.value}, Override{other.path, *f.value}}, {}});
  return out;
}

// The profile's GEMM shape block (docs/cost-model.md, "GEMM shape model").
const std::string kGemmShape = "profile.gemm_shape.";

// A complete block, for profiles that have none: every field of the block is
// required (a partial block is refused), so on such a profile a field is
// perturbed on top of this one and compared with it. An RTX 3090-like GPU
// (82 SMs, 71 TFLOP/s, 936 GB/s): any complete block serves.
std::vector<Override> complete_gemm_shape() {
  return {{"profile.gemm_shape.units", "82"},           {"profile.gemm_shape.tile_m", "128"},
          {"profile.gemm_shape.tile_n", "256"},         {"profile.gemm_shape.peak_tflops", "71"},
          {"profile.gemm_shape.memory_gbytes_per_s", "936"}, {"profile.gemm_shape.efficiency", "0.6"},
          {"profile.gemm_shape.alpha_ms", "0.01"},      {"profile.gemm_shape.provenance", "DATASHEET"}};
}

std::vector<Candidate> gemm_shape_candidates(const ScenarioField& f, const moeplan::model::ScenarioSpec& base) {
  std::vector<Override> context;
  ScenarioField field = f;
  if (!base.profile || !base.profile->gemm_shape) {
    context = complete_gemm_shape();
    for (const Override& o : context)
      if (o.field == f.path) field.value = o.value;
  }
  std::vector<std::string> values = perturbations(field, base.schedule.family, base);
  // The memory side acts on a GEMM that is memory-bound, and the bundled
  // scenarios' expert GEMMs are compute-bound at their GPUs' bandwidths (e.g.
  // H100: 6e14 FLOP/s over 3.35e12 B/s needs ~180 FLOPs per byte, and an
  // expert GEMM of thousands of rows does far more). A thousandth of the
  // bandwidth makes them memory-bound: the field must then act.
  if (f.path == kGemmShape + "memory_gbytes_per_s" && field.value)
    values.push_back(fmt::format("{}", std::stod(*field.value) / 1000));
  std::vector<Candidate> out;
  for (const std::string& v : values) out.push_back({{Override{f.path, v}}, context});
  return out;
}

// The profile's attention shape block (docs/cost-model.md, "Attention shape
// model"), complete for profiles that have none, as complete_gemm_shape: a
// host-2-like fit (64-row blocks, 20 ms per GFLOP, 2.5 ms per million scores).
const std::string kAttentionShape = "profile.attention_shape.";

std::vector<Override> complete_attention_shape() {
  return {{"profile.attention_shape.block_rows", "64"},
          {"profile.attention_shape.alpha_ms", "0.3"},
          {"profile.attention_shape.matmul_ms_per_gflop", "20"},
          {"profile.attention_shape.score_ms_per_melement", "2.5"},
          {"profile.attention_shape.provenance", "MEASURED"}};
}

std::vector<Candidate> attention_shape_candidates(const ScenarioField& f, const moeplan::model::ScenarioSpec& base) {
  std::vector<Override> context;
  ScenarioField field = f;
  if (!base.profile || !base.profile->attention_shape) {
    context = complete_attention_shape();
    for (const Override& o : context)
      if (o.field == f.path) field.value = o.value;
  }
  std::vector<Candidate> out;
  for (const std::string& v : perturbations(field, base.schedule.family, base))
    out.push_back({{Override{f.path, v}}, context});
  return out;
}

// The model's multi-head latent attention block (DeepSeek-V2/V3): its sizes
// are required together, a query/key head is qk_nope_head_dim +
// qk_rope_head_dim wide (model.head_dim, when written, says the same), every
// query head has its own key and value, and MLA's projections carry no
// biases. A field is perturbed on top of a complete block on a model so
// adjusted, and compared with it. The sizes are small and any serve.
const std::string kMla = "model.mla.";

std::vector<Candidate> mla_candidates(const ScenarioField& f, const moeplan::model::ScenarioSpec& base) {
  const std::map<std::string, std::int64_t> block = {{"q_lora_rank", 64},      {"kv_lora_rank", 32},
                                                     {"qk_nope_head_dim", 16}, {"qk_rope_head_dim", 8},
                                                     {"v_head_dim", 16}};
  const auto with_head_dim = [](std::map<std::string, std::int64_t> b) {
    std::vector<Override> out;
    for (const auto& [name, value] : b) out.push_back({kMla + name, std::to_string(value)});
    out.push_back({"model.head_dim", std::to_string(b["qk_nope_head_dim"] + b["qk_rope_head_dim"])});
    return out;
  };
  std::vector<Override> context = with_head_dim(block);
  context.push_back({"model.num_kv_heads", std::to_string(base.model.num_heads)});
  if (base.model.linear_bias) context.push_back({"model.linear_bias", "false"});
  if (base.model.qkv_bias) context.push_back({"model.qkv_bias", "false"});
  const std::string name = f.path.substr(kMla.size());
  std::vector<Candidate> out;
  for (const std::int64_t value : {2 * block.at(name), block.at(name) / 2}) {
    std::map<std::string, std::int64_t> changed = block;
    changed[name] = value;
    out.push_back({with_head_dim(changed), context});
  }
  return out;
}

enum class Outcome { Acts, Refused, Label, Unchanged, NoValidValue };

struct Probe {
  Outcome outcome = Outcome::NoValidValue;
  std::string detail;
};

bool is_label(const std::string& schema_path) {
  for (const moeplan::model::LabelField& l : moeplan::model::label_fields())
    if (l.field == schema_path) return true;
  return false;
}

std::string describe(const std::vector<Override>& overrides) {
  std::string out;
  for (const Override& o : overrides) out += (out.empty() ? "" : " ") + o.field + "=" + o.value;
  return out;
}

class Prober {
 public:
  explicit Prober(std::string scenario) : scenario_(std::move(scenario)) {}

  // The result under `overrides`, or the input error that refuses them.
  std::string result(const std::vector<Override>& overrides) {
    const std::string key = describe(overrides);
    if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
    return cache_[key] = result_of(moeplan::io::load_scenario(scenario_, overrides));
  }

  Probe probe(const std::vector<Candidate>& candidates) {
    Probe p;
    bool loaded = false;
    for (const Candidate& c : candidates) {
      std::vector<Override> both = c.context;
      both.insert(both.end(), c.with.begin(), c.with.end());
      std::string changed;
      try {
        changed = result(both);
      } catch (const moeplan::Error& e) {
        if (e.kind() != moeplan::ErrorKind::Input) FAIL(describe(both) << ": " << e.what());
        if (e.reason().find("cannot act on this") != std::string::npos) return {Outcome::Refused, e.reason()};
        p.detail += fmt::format(" [{}: {}]", describe(c.with), e.what());
        continue;  // not a valid value for this scenario: try the next
      }
      loaded = true;
      if (changed != result(c.context)) return {Outcome::Acts, describe(c.with)};
      p.detail += fmt::format(" [{}: same result]", describe(c.with));
    }
    p.outcome = loaded ? Outcome::Unchanged : Outcome::NoValidValue;
    return p;
  }

 private:
  std::string scenario_;
  std::map<std::string, std::string> cache_;
};

void check_every_field(const std::string& scenario) {
  const moeplan::model::ScenarioSpec base = moeplan::io::load_scenario(scenario);
  const Compounds compounds = compounds_for(scenario);
  const std::vector<ScenarioField> fields = moeplan::io::scenario_fields(scenario);
  Prober prober(scenario);
  // A schema field passes when any of its elements (repeated messages) passes.
  std::map<std::string, std::vector<std::pair<std::string, Probe>>> failures;
  std::set<std::string> passed;
  int acted = 0;
  for (const ScenarioField& f : fields) {
    if (passed.count(f.schema_path)) continue;
    if (is_label(f.schema_path)) {
      passed.insert(f.schema_path);
      continue;
    }
    std::vector<Candidate> candidates;
    if (f.path.rfind(kGemmShape, 0) == 0) {
      candidates = gemm_shape_candidates(f, base);
    } else if (f.path.rfind(kAttentionShape, 0) == 0) {
      candidates = attention_shape_candidates(f, base);
    } else if (f.path.rfind(kMla, 0) == 0) {
      candidates = mla_candidates(f, base);
    } else {
      for (const std::string& v : perturbations(f, base.schedule.family, base))
        candidates.push_back({{Override{f.path, v}}, {}});
    }
    const std::vector<Candidate> swaps = key_swaps(f, fields);
    candidates.insert(candidates.end(), swaps.begin(), swaps.end());
    if (const auto it = compounds.find(f.path); it != compounds.end())
      candidates.insert(candidates.end(), it->second.begin(), it->second.end());
    if (f.schema_path == "profile.costs[*].kernel") {
      // A kernel names an ELEMENTWISE line's kernel; on a profile without one
      // (a paper's), the line made an ELEMENTWISE line of that kernel.
      const std::string line = f.path.substr(0, f.path.size() - std::string("kernel").size());
      for (const char* kernel : {"fused_cross_entropy", "gradient_buffer"})
        candidates.push_back({{Override{f.path, kernel}, Override{line + "op", "ELEMENTWISE"}}, {}});
    }
    if (f.schema_path == "profile.costs[*].head_dim" && f.value) {
      // The bundled lines' head dim (MLA's 192) is no walked model's: the
      // line moved to the scenario's own head dim prices its attention core.
      candidates.push_back({{Override{f.path, std::to_string(base.model.head_dim)}}, {}});
    }
    if (f.path == "cluster.nvlink_domain_gpus") {
      // A domain must be whole nodes (1, 2, 4, 3 are refused on 8-GPU nodes, 8 is the node
      // itself): two nodes' worth joins groups that crossed a node boundary onto NVLink.
      candidates.push_back({{Override{f.path, std::to_string(2 * base.cluster.gpus_per_node)}}, {}});
    }
    if (f.path == "cluster.inter_link.ports_per_node") {
      // A node's NICs scale a line by the share of them a group gets over the
      // share its measured group got (cost::nic_share). Groups that tile full
      // nodes, priced by lines measured on full nodes, get the same share at
      // any NIC count: the count acts when a line was measured with fewer
      // ranks per node than the group runs, e.g. the inter-node AlltoAll line
      // measured at half its ranks per node. Eight NICs: 8 ranks per node
      // drive them all, 4 drive half (1 NIC: all drive it), so the A2A costs change.
      for (const ScenarioField& g : fields)
        if (g.path.rfind("profile.costs[", 0) == 0 && g.path.ends_with("].ranks_per_node") && g.value &&
            std::stoll(*g.value) >= 2) {
          const std::string line = g.path.substr(0, g.path.size() - std::string("ranks_per_node").size());
          auto value_of = [&](const std::string& key) {
            const auto it = std::find_if(fields.begin(), fields.end(),
                                         [&](const ScenarioField& x) { return x.path == line + key; });
            return it == fields.end() ? std::optional<std::string>() : it->value;
          };
          if (value_of("op") != "A2A" || value_of("link") != "INTER") continue;
          candidates.push_back({{Override{f.path, "8"}}, {Override{g.path, std::to_string(std::stoll(*g.value) / 2)}}});
          break;
        }
    }
    const Probe p = prober.probe(candidates);
    if (p.outcome == Outcome::Acts) ++acted;
    if (p.outcome == Outcome::Acts || p.outcome == Outcome::Refused)
      passed.insert(f.schema_path);
    else
      failures[f.schema_path].emplace_back(f.path, p);
  }
  // The walk reached the schema (Scenario, Model, MoeConfig, Cluster, Gpu, Link, CostProfile, LinearCost, ...).
  CHECK(fields.size() >= 80);
  CHECK(acted >= 30);
  for (const auto& [schema, probes] : failures) {
    if (passed.count(schema)) continue;
    for (const auto& [path, p] : probes) {
      INFO(scenario << ": " << path << (p.outcome == Outcome::Unchanged ? " changes nothing:" : " has no valid value:")
                    << p.detail);
      CHECK(false);
    }
  }
}

}  // namespace

TEST_CASE("every field of a FoldMoE scenario acts or is refused", "[plan][options]") {
  check_every_field("foldmoe-gpt-moe-m-16k");
}

TEST_CASE("every field of an FSMoE scenario acts or is refused", "[plan][options]") {
  check_every_field("fsmoe-testbed-b-gpt2-xl");
}

TEST_CASE("every field of a FlowMoE scenario acts or is refused", "[plan][options]") {
  check_every_field("flowmoe-gpt2-tiny-moe-c1");
}

TEST_CASE("every field of a folding scenario acts or is refused", "[plan][options]") {
  check_every_field("folding-mixtral-8x22b-128");
}

TEST_CASE("every field of a dense folding scenario acts or is refused", "[plan][options][dense]") {
  check_every_field("folding-llama3-70b-64");
}
