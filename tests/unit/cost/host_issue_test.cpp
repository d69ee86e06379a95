// The host's issue time of an eager MoE block: which parts a CUDA graph takes
// away, when a block waits on the host, and what the GPU waits for.
#include <catch2/catch.hpp>

#include <moeplan/cost/host_issue.hpp>
#include <moeplan/model/cuda_graphs.hpp>

using namespace moeplan;

namespace {

// Powers of two, so that each sum names its parts.
model::HostIssueModelSpec parts() {
  model::HostIssueModelSpec h;
  h.attention_ms = 8;
  h.router_ms = 4;
  h.moe_ms = 2;
  h.local_expert_ms = 0.25;
  return h;
}

}  // namespace

TEST_CASE("cost::moe_block_host_ms sums the parts not replayed from a CUDA graph", "[cost][host]") {
  const model::HostIssueModelSpec h = parts();
  // Eager, 4 local experts: 8 + 4 + 2 + 4 x 0.25 = 15; the MoE layer 4 + 2 + 1 = 7.
  cost::BlockHostTimes t = cost::moe_block_host_ms(h, model::parse_cuda_graphs("none"), 4);
  CHECK(t.block_ms == Approx(15));
  CHECK(t.moe_layer_ms == Approx(7));
  // The attention graphed: 15 - 8.
  t = cost::moe_block_host_ms(h, model::parse_cuda_graphs("attn"), 4);
  CHECK(t.block_ms == Approx(7));
  CHECK(t.moe_layer_ms == Approx(7));
  // Router and preprocessing graphed: 15 - 4, the layer 7 - 4.
  t = cost::moe_block_host_ms(h, model::parse_cuda_graphs("moe_router+moe_preprocess"), 4);
  CHECK(t.block_ms == Approx(11));
  CHECK(t.moe_layer_ms == Approx(3));
  // All three: only the rest of the MoE layer and the experts, 2 + 1.
  t = cost::moe_block_host_ms(h, model::parse_cuda_graphs("attn+moe_router+moe_preprocess"), 4);
  CHECK(t.block_ms == Approx(3));
  CHECK(t.moe_layer_ms == Approx(3));
  // 16 local experts instead of 4: 12 x 0.25 = 3 more.
  t = cost::moe_block_host_ms(h, model::parse_cuda_graphs("attn+moe_router+moe_preprocess"), 16);
  CHECK(t.block_ms == Approx(6));
  // One graph for the iteration: the host issues nothing per block.
  t = cost::moe_block_host_ms(h, model::parse_cuda_graphs("full_iteration"), 16);
  CHECK(t.block_ms == 0);
  CHECK(t.moe_layer_ms == 0);
}

TEST_CASE("cost::moe_dispatch_waits_on_host: dropless blocks wait, padded token drop and full graphs do not",
          "[cost][host]") {
  model::MoeSpec dropless;
  dropless.num_experts = 8;
  model::MoeSpec token_drop = dropless;
  token_drop.capacity_factor = 1.25;
  CHECK(cost::moe_dispatch_waits_on_host(dropless, model::parse_cuda_graphs("none")));
  CHECK(cost::moe_dispatch_waits_on_host(dropless, model::parse_cuda_graphs("attn+moe_router+moe_preprocess")));
  CHECK_FALSE(cost::moe_dispatch_waits_on_host(dropless, model::parse_cuda_graphs("full_iteration")));
  CHECK_FALSE(cost::moe_dispatch_waits_on_host(token_drop, model::parse_cuda_graphs("none")));
}

TEST_CASE("cost::host_wait_ms is what the host's time exceeds the GPU's by", "[cost][host]") {
  CHECK(cost::host_wait_ms(5, 3) == Approx(2));
  CHECK(cost::host_wait_ms(3, 5) == 0);
  CHECK(cost::host_wait_ms(0, 0) == 0);
}
