#pragma once
// What Megatron-Core's activation recomputation adds to a block's backward
// pass (docs/cost-model.md, "Recomputation"): the forward of each recomputed
// submodule, run again before its gradients. price_layers measures the parts;
// this file only chooses and adds them, so the memory side (memory.cpp) and
// the time side read the same RecomputeSpec the same way.

#include <cstdint>
#include <vector>

#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief One block's forward parts per micro-batch and GPU (ms) that a recomputation runs again.
struct RecomputeParts {
  double attention_core_ms = 0;    ///< core_attn: the attention core (flash forward)
  double norms_ms = 0;             ///< layernorm, MoE block: the pre-MLP norm (and MLA's input norm)
  double dense_norms_ms = 0;       ///< layernorm, dense block: MLA's input norm (the others are fused)
  double moe_activation_ms = 0;    ///< moe_act: the routed experts' activation function
  double mla_up_proj_ms = 0;       ///< mla_up_proj: the Q and KV up-projection GEMMs
  double dense_mlp_ms = 0;         ///< mlp: a dense block's MLP with its TP collectives and casts
  double moe_layer_ms = 0;         ///< moe: router, dispatch, experts, combine, ETP collectives, casts
  double shared_experts_ms = 0;    ///< shared_experts: the shared experts' GEMMs
  double moe_block_forward_ms = 0;    ///< full: a whole MoE block, communication included
  double dense_block_forward_ms = 0;  ///< full: a whole dense block
};

/// @brief What recomputation adds to one block's backward pass (ms, per micro-batch).
struct RecomputeTimes {
  double moe_block_ms = 0;
  double dense_block_ms = 0;
};

/// The share of the model's blocks that full recomputation reruns: all of
/// them with the uniform method; with block, min(num_layers, blocks) of each
/// model chunk (`chunk_layers`, chunk_layer_counts) over all blocks. 0 unless full.
double full_recompute_share(const model::RecomputeSpec& recompute, const std::vector<std::int64_t>& chunk_layers);

/// The recomputed forward work of `recompute` from the parts: selective, the
/// listed submodules' parts (a dense block reruns core_attn, layernorm,
/// mla_up_proj and mlp; an MoE block all but mlp); full, each whole block
/// times full_recompute_share (the stage's blocks priced at the model's mean).
RecomputeTimes recompute_times(const model::RecomputeSpec& recompute, const RecomputeParts& parts,
                               double full_share);

}  // namespace moeplan::cost
