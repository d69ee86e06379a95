#include <moeplan/cost/recompute_pricing.hpp>

#include <algorithm>

#include <moeplan/core/units.hpp>
#include <moeplan/model/recompute.hpp>

namespace moeplan::cost {

double full_recompute_share(const model::RecomputeSpec& r, const std::vector<std::int64_t>& chunk_layers) {
  if (r.granularity != "full") return 0;
  if (r.method == "uniform") return 1;
  std::int64_t blocks = 0, recomputed = 0;
  for (const std::int64_t n : chunk_layers) {
    blocks += n;
    recomputed += std::min(r.num_layers, n);
  }
  return blocks > 0 ? as_double(recomputed) / as_double(blocks) : 0.0;
}

RecomputeTimes recompute_times(const model::RecomputeSpec& r, const RecomputeParts& p, double full_share) {
  RecomputeTimes t;
  if (r.granularity == "full") {
    t.moe_block_ms = full_share * p.moe_block_forward_ms;
    t.dense_block_ms = full_share * p.dense_block_forward_ms;
    return t;
  }
  for (const std::string& module : model::recomputed_modules(r)) {
    if (module == "core_attn") {
      t.moe_block_ms += p.attention_core_ms;
      t.dense_block_ms += p.attention_core_ms;
    } else if (module == "layernorm") {
      t.moe_block_ms += p.norms_ms;
      t.dense_block_ms += p.dense_norms_ms;
    } else if (module == "mla_up_proj") {
      t.moe_block_ms += p.mla_up_proj_ms;
      t.dense_block_ms += p.mla_up_proj_ms;
    } else if (module == "mlp") {
      t.dense_block_ms += p.dense_mlp_ms;
    } else if (module == "moe_act") {
      t.moe_block_ms += p.moe_activation_ms;
    } else if (module == "moe") {
      t.moe_block_ms += p.moe_layer_ms;
    } else if (module == "shared_experts") {
      t.moe_block_ms += p.shared_experts_ms;
    }
  }
  return t;
}

}  // namespace moeplan::cost
