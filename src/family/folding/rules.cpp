#include <moeplan/family/folding/rules.hpp>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/model/pipeline_layout.hpp>

namespace moeplan::folding {
namespace {

using S = const model::ScenarioSpec&;

std::vector<model::OptionRule> make_rules() {
  std::vector<model::OptionRule> r;
  auto always = [](S) { return true; };
  // Knobs of the layer schedules: folding searches mappings and runs none.
  r.push_back({"schedule.name", "", "the folding planner searches mappings and runs no named schedule", always});
  r.push_back({"schedule.degree", "",
               "a per-layer overlap degree of the FoldMoE, FSMoE and FlowMoE schedules; folding pipelines over pp, vpp",
               always});
  for (const char* f : {"schedule.degree_forward", "schedule.degree_backward"})
    r.push_back({f, "", "FSMoE's per-phase pipeline degrees r_f and r_b; other families take one degree", always});
  r.push_back({"schedule.slicing", "", "FoldMoE's attention slices (token counts of each slice)", always});
  r.push_back({"schedule.ar_chunk_bytes", "", "FlowMoE's all-reduce chunk size Sp", always});
  r.push_back({"schedule.fsmoe_released_solver_rules", "", "a rule set of FSMoE's degree solver", always});
  r.push_back({"schedule.mode", "",
               "the FoldMoE, FSMoE and FlowMoE schedules build a graph with one rank per GPU (multi_rank); folding "
               "prices mappings in closed form",
               always});
  for (const char* f : {"schedule.slow_ranks_compute_factor", "schedule.slow_ranks_fraction"})
    r.push_back({f, "",
                 "a straggler slows some ranks, which needs a graph with one rank per GPU: FoldMoE, FSMoE or FlowMoE "
                 "in multi_rank mode",
                 always});
  // Sequence parallelism splits activations over the tp group.
  // (With tp = 1 it splits by one: true and false are the same, as in Megatron-LM, which turns it off.)
  r.push_back({"parallelism.sequence_parallel", "when false",
               "folding prices Megatron-Core's MoE layers, which require sequence parallelism whenever tp > 1",
               [](S s) { return !s.parallel.sequence_parallel; }});
  // The MFU divides by the peak of the model's datatype (plan/mapping_run.cpp).
  r.push_back({"cluster.gpu.peak_tflops_fp32", "with 2-byte elements",
               "times come from the cost profile; the peak enters folding's MFU, for 4-byte elements only",
               [](S s) { return s.model.dtype_bytes != 4; }});
  r.push_back({"cluster.gpu.peak_tflops_bf16", "with 4-byte elements",
               "times come from the cost profile; the peak enters folding's MFU, for 2-byte elements only",
               [](S s) { return s.model.dtype_bytes == 4; }});
  r.push_back({"cluster.gpu.peak_tflops_fp16", "unless 2-byte elements on a GPU without BF16",
               "times come from the cost profile; folding's MFU reads the FP16 peak only for 2-byte elements on a "
               "GPU without a BF16 peak",
               [](S s) { return s.model.dtype_bytes == 4 || s.cluster.gpu.peak_flops_per_s_bf16 > 0; }});
  // Folding's pipeline overlaps only its stage-to-stage P2P transfers with compute.
  for (const char* f : {"profile.overlap_compute_slowdown", "profile.overlap_comm_slowdown"})
    r.push_back({f, "when pp is 1",
                 "folding prices a layer's collectives as exposed and overlaps only the P2P transfers between pipeline "
                 "stages with compute; with pp = 1 there are none",
                 [](S s) { return s.parallel.pp == 1; }});
  // The distributed optimizer's step moves nothing with dp x cp = edp = 1.
  for (const char* f : {"schedule.overlap_grad_reduce", "schedule.overlap_param_gather"})
    r.push_back({f, "when dp x cp and edp are 1",
                 "the distributed optimizer reduces and gathers nothing without data parallelism: there is no step "
                 "to overlap",
                 [](S s) { return s.parallel.dp * s.parallel.cp == 1 && s.parallel.edp == 1; }});
  r.push_back({"schedule.average_in_collective", "when dp x cp and edp are 1",
               "without data parallelism there is no gradient collective to average, and no gradient is pre-scaled "
               "either way",
               [](S s) { return s.parallel.dp * s.parallel.cp == 1 && s.parallel.edp == 1; }});
  // Megatron-FSDP moves the blocks' collectives out of the step into each
  // block's passes, priced overlapped there (prefetch): the step's overlap
  // flags have only the ends' collectives left, which they leave exposed.
  for (const char* f : {"schedule.overlap_grad_reduce", "schedule.overlap_param_gather"})
    r.push_back({f, "under data_parallel_sharding_strategy optim_grads_params",
                 "Megatron-FSDP gathers and reduce-scatters each block beside its compute (priced overlapped); "
                 "the step keeps only the embedding's and LM head's collectives, which these flags do not hide",
                 [](S s) { return model::fully_sharded(s.schedule); }});
  // Nothing to shard without data parallelism.
  r.push_back({"schedule.data_parallel_sharding_strategy", "when dp x cp and edp are 1",
               "without data parallelism there is no group to shard weights, gradients or optimizer state over",
               [](S s) { return s.parallel.dp * s.parallel.cp == 1 && s.parallel.edp == 1; }});
  r.push_back({"schedule.a2a_overlap", "when ep is 1 or the model is dense",
               "with ep = 1 (or no experts) there is no AlltoAll to overlap",
               [](S s) { return s.parallel.ep == 1 || s.model.is_dense(); }});
  // A profile line of one kernel: Transformer Engine's fused loss runs only
  // under its fusion (docs/cost-model.md, "The model's ends"); the gradient
  // buffer passes run in every folding step ("Gradient buffer passes").
  r.push_back({"profile.costs[*].kernel", "for a fused_cross_entropy line without schedule.cross_entropy_fusion te",
               "a fused_cross_entropy line prices Transformer Engine's fused loss, which runs only under "
               "schedule.cross_entropy_fusion te (a gradient_buffer line prices every folding scenario's step)",
               [](S s) {
                 const bool fused_loss_line =
                     s.profile && std::any_of(s.profile->costs.begin(), s.profile->costs.end(),
                                              [](const model::LinearCostSpec& c) {
                                                return c.kernel && *c.kernel == model::kFusedCrossEntropyKernel;
                                              });
                 return fused_loss_line && !s.schedule.fused_cross_entropy();
               }});
  // CUDA graphs change only the host's issue time (cost/host_issue.hpp),
  // priced where an MoE block's dispatcher waits on the host and the profile
  // has a host_issue model.
  r.push_back({"schedule.cuda_graphs",
               "for a dense model, a token-drop model (moe.capacity_factor), or a profile without host_issue",
               "CUDA graphs change only the host's time to issue an MoE block, which moeplan prices where a "
               "dropless dispatcher waits on the host and the cost profile has a host_issue model",
               [](S s) {
                 return s.model.is_dense() || s.model.moe.capacity_factor.has_value() || !s.profile ||
                        !s.profile->host_issue;
               }});
  r.push_back({"profile.host_issue.", "for a dense model or a token-drop model (moe.capacity_factor)",
               "the host's issue time is priced where a dropless MoE dispatcher waits on the host; a dense block "
               "or a token-drop (padded, static-shape) block never waits",
               [](S s) { return s.model.is_dense() || s.model.moe.capacity_factor.has_value(); }});
  r.push_back({"schedule.moe_dispatcher", "when ep is 1 or the model is dense",
               "with ep = 1 (or no experts) there is no dispatch for a token dispatcher to make",
               [](S s) { return s.parallel.ep == 1 || s.model.is_dense(); }});
  r.push_back({"schedule.fused_grouped_mlp", "when the model is dense",
               "a dense model has no routed experts' grouped MLP to fuse",
               [](S s) { return s.model.is_dense(); }});
  // Noise is a question simulate answers (mean and p95 over seeds) for the layer schedules.
  r.push_back({"schedule.compute_jitter_cv", "",
               "noise on compute tasks is simulated for the FoldMoE, FSMoE and FlowMoE schedules; folding prices each "
               "mapping once",
               always});
  r.push_back({"model.tie_embeddings", "when pp > 1",
               "the FoldMoE, FSMoE and FlowMoE schedules time the transformer blocks only; with pp > 1 Megatron "
               "keeps the tied output weights on the last stage, so tying changes no stage's memory",
               [](S s) { return s.parallel.pp > 1; }});
  // Routing (docs/cost-model.md, "Uneven expert load"): the planner prices the expected, balanced load.
  // The kernel decides what is stored only where the attention core is not
  // recomputed (none, or selective without core_attn).
  r.push_back({"schedule.attention_backend", "when the attention core is recomputed",
               "with full recomputation or selective core_attn no attention scores are stored, whatever the kernel",
               [](S s) {
                 return s.schedule.recompute.granularity == "full" ||
                        model::recomputes_module(s.schedule.recompute, "core_attn");
               }});
  r.push_back({"workload.routing", "unless balanced", "folding's planner prices the balanced (expected) load",
               [](S s) { return s.workload.routing != model::Routing::Balanced; }});
  r.push_back({"workload.routing_zipf_s", "", "the Zipf exponent of routing = zipf", always});
  r.push_back({"workload.routing_histogram_ref", "", "the per-expert token histogram of routing = histogram", always});
  r.push_back({"workload.routing_seed", "",
               "seeds the sampler of zipf and histogram routing; balanced routing is the exact expected load and "
               "draws nothing",
               always});
  return r;
}

class FoldingRules final : public model::FamilyRules {
 public:
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& schedules() const override { return schedules_; }
  bool names_schedules() const override { return false; }
  const std::vector<std::string>& read_fields() const override { return read_fields_; }
  const std::vector<model::OptionRule>& option_rules() const override { return option_rules_; }

  std::vector<model::KnobSetting> plan_knob_settings(const model::PlanSpec& plan) const override {
    const model::PlanKnobs& k = plan.knobs;
    if (!k.parallelism)
      throw Error(ErrorKind::Input, "a folding plan names its mapping (knobs.parallelism)", "knobs.parallelism");
    const model::ParallelSpec& p = *k.parallelism;
    std::vector<model::KnobSetting> out;
    for (const auto& [field, value] : {std::pair{"tp", p.tp}, {"cp", p.cp}, {"pp", p.pp}, {"vpp", p.vpp},
                                       {"ep", p.ep}, {"etp", p.etp}})
      out.push_back({fmt::format("parallelism.{}", field), std::to_string(value),
                     fmt::format("knobs.parallelism.{}", field)});
    if (!p.stage_layers.empty())
      out.push_back({"parallelism.pipeline_layout", model::pipeline_layout_text(p.stage_layers, p.layout_mtp_blocks),
                     "knobs.parallelism.pipeline_layout"});
    if (k.micro_batch_size)
      out.push_back({"workload.micro_batch_size", std::to_string(*k.micro_batch_size), "knobs.micro_batch_size"});
    // Knobs the scenario's schedule.search opened: the chosen values, and the
    // search closed (the plan's run is one configuration).
    if (k.precision || k.recompute) out.push_back({"schedule.search", "", "knobs"});
    if (k.precision) out.push_back({"workload.precision", model::to_string(*k.precision), "knobs.precision"});
    if (k.recompute) {
      const model::RecomputeSpec& r = *k.recompute;
      out.push_back({"schedule.recompute", r.granularity, "knobs.recompute"});
      if (!r.modules.empty())
        out.push_back({"schedule.recompute_modules", fmt::format("{}", fmt::join(r.modules, ",")), "knobs.recompute"});
      if (r.granularity == "full") {
        out.push_back({"schedule.recompute_method", r.method, "knobs.recompute"});
        out.push_back({"schedule.recompute_num_layers", std::to_string(r.num_layers), "knobs.recompute"});
      }
    }
    return out;
  }

 private:
  std::string name_ = "folding";
  std::vector<std::string> schedules_{"folded", "coupled"};
  std::vector<std::string> read_fields_{"parallelism.pp",
                                        "parallelism.vpp",
                                        "parallelism.order",
                                        "parallelism.etp",
                                        "schedule.recompute",
                                        "schedule.recompute_modules",
                                        "schedule.recompute_method",
                                        "schedule.recompute_num_layers",
                                        "schedule.search",
                                        "parallelism.cp_comm_type",
                                        "parallelism.hierarchical_cp_sizes",
                                        "schedule.attention_backend",
                                        "profile.costs[*].attention_pass",
                                        "profile.costs[*].head_dim",
                                        "profile.costs[*].kernel",
                                        "schedule.overlap_grad_reduce",
                                        "schedule.overlap_param_gather",
                                        "schedule.a2a_overlap",
                                        "schedule.grad_reduce_in_bf16",
                                        "schedule.check_for_nan_in_grad",
                                        "schedule.average_in_collective",
                                        "schedule.precision_aware_optimizer",
                                        "schedule.optimizer_moments_dtype",
                                        "schedule.master_weights",
                                        "schedule.fused_grouped_mlp",
                                        "schedule.data_parallel_sharding_strategy",
                                        "schedule.moe_dispatcher",
                                        "schedule.cross_entropy_fusion",
                                        "schedule.cuda_graphs",
                                        "profile.host_issue.attention_ms",
                                        "profile.host_issue.router_ms",
                                        "profile.host_issue.moe_ms",
                                        "profile.host_issue.local_expert_ms",
                                        "cluster.gpu.memory_gib",
                                        "model.vocab_size",
                                        "model.max_position_embeddings",
                                        "model.norm_type",
                                        "model.qkv_bias",
                                        "model.moe.shared_expert_gate",
                                        "model.moe.glu_clamp",
                                        "model.moe.moe_layer_interval",
                                        "model.moe.moe_layer_offset",
                                        "model.moe.moe_layers",
                                        "model.sliding_window",
                                        "model.sliding_window_layers",
                                        "model.attention_chunk_size",
                                        "model.attention_chunk_layers",
                                        "model.mtp_num_layers",
                                        "model.attention_sinks",
                                        "model.moe.first_k_dense",
                                        "workload.global_batch_size",
                                        "workload.precision",
                                        "parallelism.pipeline_layout"};
  std::vector<model::OptionRule> option_rules_ = make_rules();
};

}  // namespace

const model::FamilyRules& rules() {
  static const FoldingRules r;
  return r;
}

}  // namespace moeplan::folding
