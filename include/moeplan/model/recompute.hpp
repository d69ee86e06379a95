#pragma once
// Megatron-Core's activation recomputation options (RecomputeSpec,
// specs.hpp): the submodule names, the rules that tie them to a model, and
// the short form the published-runs table and reports write
// (docs/cost-model.md, "Recomputation", prices them).

#include <string>
#include <vector>

#include <moeplan/model/specs.hpp>

namespace moeplan::model {

/// Megatron-Core's --recompute-modules choices (transformer_config.py,
/// TransformerConfig.recompute_modules), in its order.
const std::vector<std::string>& recompute_module_names();

/// The submodules a selective spec recomputes: its list, or core_attn
/// (Megatron's default) when it lists none; empty unless selective.
std::vector<std::string> recomputed_modules(const RecomputeSpec& recompute);

/// Whether a selective spec recomputes `module`.
bool recomputes_module(const RecomputeSpec& recompute, const std::string& module);

/// Input error naming the field (schedule.recompute, schedule.recompute_modules,
/// schedule.recompute_method, schedule.recompute_num_layers) when the spec
/// cannot act on the model: an unknown or repeated module, a module the model
/// has no part for (mla_up_proj without MLA, moe/moe_act without experts,
/// shared_experts without shared experts, mlp without dense blocks), moe with
/// moe_act or shared_experts (already recomputed inside it), modules without
/// selective granularity, a method other than uniform or block, or too few layers.
void validate_recompute(const ModelSpec& model, const RecomputeSpec& recompute);

/// The short form: "none", "selective" (core_attn), "selective:mla_up_proj+mlp",
/// "full" (uniform, 1 layer), "full:block:2" (method and layers when not the default).
std::string recompute_text(const RecomputeSpec& recompute);

/// Reads the short form (input error naming `field` when it is not one).
RecomputeSpec parse_recompute(const std::string& text, const std::string& field);

}  // namespace moeplan::model
