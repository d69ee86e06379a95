#include <moeplan/family/layer_schedule_rules.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::family {
namespace {

using S = const model::ScenarioSpec&;

// Megatron-Core's default rank order (docs/formats.md, parallelism.order).
constexpr const char* kDefaultOrder = "tp-cp-ep-dp-pp";

}  // namespace

std::vector<model::OptionRule> layer_schedule_option_rules() {
  std::vector<model::OptionRule> r;
  for (const char* f : {"schedule.slow_ranks_compute_factor", "schedule.slow_ranks_fraction"})
    r.push_back({f, "in symmetric mode",
                 "a straggler slows some ranks, which needs a graph with one rank per GPU: FoldMoE, FSMoE or FlowMoE "
                 "in multi_rank mode",
                 [](S s) { return !s.schedule.multi_rank; }});
  // Pipeline parallelism and rank order are mapped by the folding planner only;
  // the layer schedules run one stage holding every layer.
  r.push_back({"parallelism.pp", "when pp is not 1",
               "the FoldMoE, FSMoE and FlowMoE schedules run every layer on one pipeline stage",
               [](S s) { return s.parallel.pp != 1; }});
  r.push_back({"parallelism.vpp", "when vpp is not 1", "virtual pipeline stages are mapped by the folding planner only",
               [](S s) { return s.parallel.vpp != 1; }});
  r.push_back({"parallelism.order", "when not tp-cp-ep-dp-pp",
               "the FoldMoE, FSMoE and FlowMoE schedules place groups in Megatron's default order",
               [](S s) { return s.parallel.order != kDefaultOrder; }});
  for (const char* f : {"parallelism.cp_comm_type", "parallelism.hierarchical_cp_sizes"})
    r.push_back({f, "",
                 "Megatron-Core's context-parallel exchanges are priced by the folding family; the FoldMoE, FSMoE and "
                 "FlowMoE schedules price no CP exchange variant",
                 [](S) { return true; }});
  r.push_back({"schedule.search", "",
               "the folding planner searches precision and recomputation with the mapping; the FoldMoE, FSMoE and "
               "FlowMoE planners search their own schedule's knobs",
               [](S) { return true; }});
  for (const char* f : {"schedule.recompute", "schedule.recompute_modules", "schedule.recompute_method",
                        "schedule.recompute_num_layers"})
    r.push_back({f, "",
                 "activation recomputation is priced by the folding family (memory and the backward pass's "
                 "time); the FoldMoE, FSMoE and FlowMoE schedules time no recomputation",
                 [](S) { return true; }});
  for (const char* f : {"model.sliding_window", "model.sliding_window_layers"})
    r.push_back({f, "",
                 "the FoldMoE, FSMoE and FlowMoE schedules price causal attention over the whole sequence; the "
                 "folding family prices a sliding window",
                 [](S) { return true; }});
  for (const char* f : {"model.attention_chunk_size", "model.attention_chunk_layers"})
    r.push_back({f, "",
                 "the FoldMoE, FSMoE and FlowMoE schedules price causal attention over the whole sequence; the "
                 "folding family prices chunked attention",
                 [](S) { return true; }});
  r.push_back({"model.mtp_num_layers", "",
               "multi-token prediction modules run on the last pipeline stage after the blocks, priced by the "
               "folding family; the FoldMoE, FSMoE and FlowMoE schedules time the blocks alone",
               [](S s) { return s.model.mtp_num_layers > 0; }});
  r.push_back({"model.attention_sinks", "",
               "sinks are parameters without a GEMM: they enter folding's memory check; the other families' "
               "schedules price time, not memory",
               [](S) { return true; }});
  r.push_back({"schedule.a2a_overlap", "",
               "Megatron-Core's 1F1B A2A overlap, priced by the folding family; the FoldMoE, FSMoE and FlowMoE "
               "schedules overlap the AlltoAll their own way (their schedule.name)",
               [](S) { return true; }});
  r.push_back({"schedule.cross_entropy_fusion", "",
               "Megatron-Core's loss kernel, priced by the folding family on the last stage; the FoldMoE, FSMoE and "
               "FlowMoE schedules time a stack of layers, without the LM head and loss",
               [](S) { return true; }});
  r.push_back({"profile.costs[*].kernel", "",
               "the kernels a line names are Transformer Engine's fused loss and Megatron-Core DDP's passes over the "
               "gradient buffers, priced by the folding family on the last stage and in the optimizer step; the "
               "FoldMoE, FSMoE and FlowMoE schedules time a stack of layers, without the loss or the step",
               [](S) { return true; }});
  r.push_back({"schedule.moe_dispatcher", "",
               "Megatron-Core's token dispatcher (AlltoAll, DeepEP or HybridEP), priced by the folding family; the FoldMoE, "
               "FSMoE and FlowMoE schedules time the papers' AlltoAll",
               [](S) { return true; }});
  for (const char* f : {"schedule.overlap_grad_reduce", "schedule.overlap_param_gather"})
    r.push_back({f, "",
                 "Megatron-Core's data-parallel overlap of the distributed optimizer's step, priced by the folding "
                 "family; the FoldMoE, FSMoE and FlowMoE schedules place their own gradient collectives",
                 [](S) { return true; }});
  r.push_back({"schedule.data_parallel_sharding_strategy", "",
               "Megatron-Core's data-parallel sharding (Megatron-FSDP), priced by the folding family; the FoldMoE, "
               "FSMoE and FlowMoE schedules place their own gradient collectives and hold whole weights",
               [](S) { return true; }});
  r.push_back({"parallelism.pipeline_layout", "",
               "the FoldMoE, FSMoE and FlowMoE schedules run every layer on one pipeline stage",
               [](S) { return true; }});
  r.push_back({"workload.precision", "unless bf16",
               "FP8 recipes are priced for Megatron-Core's linear layers by the folding family; the FoldMoE, FSMoE "
               "and FlowMoE schedules price the papers' half-precision kernels",
               [](S s) { return model::is_fp8(s.workload.precision); }});
  r.push_back({"schedule.attention_backend", "",
               "the attention kernel's stored activations enter folding's memory check; the other families' "
               "schedules price time, not memory",
               [](S) { return true; }});
  r.push_back({"cluster.gpu.memory_gib", "",
               "times come from the cost profile; the GPU's memory enters folding's memory check only",
               [](S) { return true; }});
  // Folding's MFU divides by the peak of the model's datatype.
  r.push_back({"cluster.gpu.peak_tflops_fp32", "",
               "times come from the cost profile; the peak enters folding's MFU, for 4-byte elements only",
               [](S) { return true; }});
  r.push_back({"cluster.gpu.peak_tflops_bf16", "",
               "times come from the cost profile; the peak enters folding's MFU, for 2-byte elements only",
               [](S) { return true; }});
  r.push_back({"cluster.gpu.peak_tflops_fp16", "",
               "times come from the cost profile; folding's MFU reads the FP16 peak only for 2-byte elements on a "
               "GPU without a BF16 peak",
               [](S) { return true; }});
  // Model parts the layer schedules do not contain.
  for (const char* f : {"model.vocab_size", "model.max_position_embeddings"})
    r.push_back({f, "",
                 "the FoldMoE, FSMoE and FlowMoE schedules time the transformer blocks, not the embedding and "
                 "output layer; folding counts them",
                 [](S) { return true; }});
  r.push_back({"model.tie_embeddings", "",
               "the FoldMoE, FSMoE and FlowMoE schedules time the transformer blocks only; with pp > 1 Megatron "
               "keeps the tied output weights on the last stage, so tying changes no stage's memory",
               [](S) { return true; }});
  for (const char* f : {"model.norm_type", "model.qkv_bias"})
    r.push_back({f, "",
                 "norm and Q/K/V bias parameters are not in the layer schedules' compute or gradients (each under "
                 "0.1% of a block's parameters); folding counts them in memory",
                 [](S) { return true; }});
  r.push_back({"model.moe.shared_expert_gate", "",
               "Qwen2-MoE's d_model x 1 gate on the shared experts' output is not in the layer schedules' compute or "
               "gradients (under 0.01% of a block's parameters); folding counts it in memory",
               [](S) { return true; }});
  return r;
}

std::vector<model::OptionRule> all_moe_block_option_rules() {
  std::vector<model::OptionRule> r;
  for (const char* f : {"model.moe.moe_layer_interval", "model.moe.moe_layer_offset", "model.moe.moe_layers",
                        "model.moe.first_k_dense"})
    r.push_back({f, "",
                 "the FSMoE and FlowMoE schedules build every block as an MoE block (the papers' models); a model "
                 "with dense blocks is refused on them",
                 [](S) { return true; }});
  return r;
}

void validate_moe_model(const model::ScenarioSpec& s, const std::string& family) {
  if (s.model.is_dense())
    throw_input_error("schedule.family",
                      fmt::format("model {} is dense (no moe): the {} schedules overlap MoE layers' expert "
                                  "communication, of which it has none (family folding plans dense models)",
                                  s.model.name, family));
  if (s.model.sliding_window > 0)
    throw_input_error("schedule.family",
                      fmt::format("model {} has sliding-window attention: the {} schedules price causal attention "
                                  "over the whole sequence (family folding prices the window)",
                                  s.model.name, family));
  if (s.model.num_chunk_layers() > 0)
    throw_input_error("schedule.family",
                      fmt::format("model {} has chunked attention: the {} schedules price causal attention over "
                                  "the whole sequence (family folding prices the chunks)",
                                  s.model.name, family));
}

void validate_one_stage(const model::ScenarioSpec& s, const std::string& family) {
  if (s.parallel.pp != 1 || s.parallel.vpp != 1)
    throw_input_error("parallelism.pp",
                      fmt::format("pp = {}, vpp = {}; the {} schedules run every layer on one pipeline stage (folding "
                                  "maps pipelines)",
                                  s.parallel.pp, s.parallel.vpp, family));
}

void validate_all_moe_blocks(const model::ScenarioSpec& s, const std::string& family) {
  const model::ModelSpec& m = s.model;
  if (m.num_moe_layers() != m.num_layers)
    throw_input_error(m.moe.first_k_dense > 0 ? "model.moe.first_k_dense" : "model.moe",
                      fmt::format("{} of {} blocks are dense{}; the {} schedules build every block as an MoE block",
                                  m.num_layers - m.num_moe_layers(), m.num_layers,
                                  m.moe.first_k_dense > 0 ? fmt::format(" (the first {})", m.moe.first_k_dense) : "",
                                  family));
}

std::vector<std::string> layer_schedule_read_fields() {
  return {"schedule.name",          "schedule.degree",
          "schedule.mode",          "schedule.compute_jitter_cv",
          "parallelism.sequence_parallel",
          "profile.overlap_compute_slowdown", "profile.overlap_comm_slowdown",
          "workload.routing",       "workload.routing_zipf_s",
          "workload.routing_histogram_ref",   "workload.routing_seed"};
}

}  // namespace moeplan::family
