// What recomputation adds to a block's backward pass: which parts, and the
// share of blocks full recomputation reruns.
#include <catch2/catch.hpp>

#include <moeplan/cost/recompute_pricing.hpp>
#include <moeplan/model/recompute.hpp>

using namespace moeplan;

TEST_CASE("cost::full_recompute_share: uniform reruns every block, block the first n of each chunk",
          "[cost][recompute]") {
  const std::vector<std::int64_t> chunks{3, 3, 2};  // 8 blocks in three model chunks
  CHECK(cost::full_recompute_share(model::parse_recompute("full", "r"), chunks) == 1.0);
  // block 2: 2 + 2 + 2 of 8 blocks.
  CHECK(cost::full_recompute_share(model::parse_recompute("full:block:2", "r"), chunks) == Approx(0.75));
  // block 3: 3 + 3 + 2 (the last chunk has two): all.
  CHECK(cost::full_recompute_share(model::parse_recompute("full:block:3", "r"), chunks) == Approx(1.0));
  CHECK(cost::full_recompute_share(model::parse_recompute("selective", "r"), chunks) == 0.0);
}

TEST_CASE("cost::recompute_times adds the recomputed parts only", "[cost][recompute]") {
  // Powers of two, so that each sum names its parts.
  cost::RecomputeParts p;
  p.attention_core_ms = 1;
  p.norms_ms = 2;
  p.dense_norms_ms = 4;
  p.moe_activation_ms = 8;
  p.mla_up_proj_ms = 16;
  p.dense_mlp_ms = 32;
  p.moe_layer_ms = 64;
  p.shared_experts_ms = 128;
  p.moe_block_forward_ms = 256;
  p.dense_block_forward_ms = 512;
  const auto times = [&](const char* text, double share = 0) {
    return cost::recompute_times(model::parse_recompute(text, "r"), p, share);
  };
  CHECK(times("none").moe_block_ms == 0);
  CHECK(times("none").dense_block_ms == 0);
  // core_attn (the default): both blocks.
  CHECK(times("selective").moe_block_ms == 1);
  CHECK(times("selective").dense_block_ms == 1);
  // The MoE block: norms 2, moe_act 8, mla 16, shared 128; the dense block: norms 4, mla 16, mlp 32.
  const cost::RecomputeTimes t = times("selective:layernorm+moe_act+mla_up_proj+mlp+shared_experts");
  CHECK(t.moe_block_ms == 2 + 8 + 16 + 128);
  CHECK(t.dense_block_ms == 4 + 16 + 32);
  CHECK(times("selective:moe").moe_block_ms == 64);
  // full: the whole blocks times the share.
  CHECK(times("full:block:1", 0.5).moe_block_ms == 128);
  CHECK(times("full:block:1", 0.5).dense_block_ms == 256);
}
