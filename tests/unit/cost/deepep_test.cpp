// DeepEP's dispatch (docs/cost-model.md, "DeepEP dispatcher"): the expected
// nodes and GPUs a token reaches, and the AlltoAll buffers that price it.
// Every expected value is derived by hand in the comment beside it.

#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/deepep.hpp>

#include "../test_support.hpp"

namespace {

using moeplan::cost::expected_holders_reached;
using moeplan::cost::miss_probability;

moeplan::model::MoeSpec deepep_experts(std::int64_t experts, std::int64_t top_k) {
  moeplan::model::MoeSpec moe;
  moe.num_experts = experts;
  moe.top_k = top_k;
  return moe;
}

moeplan::model::MoeSpec deepep_grouped(std::int64_t experts, std::int64_t top_k, std::int64_t groups,
                                       std::int64_t chosen) {
  moeplan::model::MoeSpec moe = deepep_experts(experts, top_k);
  moe.num_expert_groups = groups;
  moe.topk_groups = chosen;
  return moe;
}

}  // namespace

TEST_CASE("miss_probability is C(N - h, k) / C(N, k)", "[cost][deepep]") {
  // C(2, 2) / C(4, 2) = 1 / 6; C(6, 2) / C(8, 2) = 15 / 28.
  CHECK(miss_probability(4, 2, 2) == Approx(1.0 / 6.0));
  CHECK(miss_probability(8, 2, 2) == Approx(15.0 / 28.0));
  // Fewer unmarked experts than picks: every draw hits (C(1, 2) = 0).
  CHECK(miss_probability(4, 3, 2) == 0.0);
  // Nothing marked: nothing hit.
  CHECK(miss_probability(4, 0, 2) == 1.0);
}

TEST_CASE("expected_holders_reached: balanced top-k over equal blocks of experts", "[cost][deepep]") {
  // E = 4 experts on n = 2 nodes, k = 2: a node is missed when both experts are
  // the other node's: C(2, 2) / C(4, 2) = 1/6, so each node is reached with
  // 5/6 and a token reaches 2 x 5/6 = 5/3 nodes (of its k = 2 copies).
  CHECK(expected_holders_reached(deepep_experts(4, 2), 2) == Approx(5.0 / 3.0));
  // One expert per holder: k distinct experts are k distinct holders:
  // 8 x (1 - C(7, 2) / C(8, 2)) = 8 x (1 - 21/28) = 2.
  CHECK(expected_holders_reached(deepep_experts(8, 2), 8) == Approx(2.0));
  // One holder of everything: reached once.
  CHECK(expected_holders_reached(deepep_experts(8, 2), 1) == Approx(1.0));
  // E = 8 on 4 holders of 2, k = 2: 4 x (1 - C(6, 2) / C(8, 2)) = 4 x 13/28 = 13/7.
  CHECK(expected_holders_reached(deepep_experts(8, 2), 4) == Approx(13.0 / 7.0));
  // k = 3 of E = 6 on 3 holders: a holder missed with C(4, 3) / C(6, 3) = 4/20,
  // so 3 x 4/5 = 12/5.
  CHECK(expected_holders_reached(deepep_experts(6, 3), 3) == Approx(12.0 / 5.0));
}

TEST_CASE("expected_holders_reached under group-limited routing", "[cost][deepep]") {
  // E = 8 in G = 4 groups of 2, one group chosen, k = 2: both experts are the
  // chosen group's, which sits on one of n = 2 nodes: exactly 1 node.
  CHECK(expected_holders_reached(deepep_grouped(8, 2, 4, 1), 2) == Approx(1.0));
  // ... and on one of 4 ranks of 2 experts (a rank is a group): 1 rank.
  CHECK(expected_holders_reached(deepep_grouped(8, 2, 4, 1), 4) == Approx(1.0));
  // Two of the 4 groups chosen, n = 2 nodes of 2 groups each: the chosen pair
  // is on one node with 2 x C(2,2) / C(4,2) = 1/3 (then 1 node), split with
  // 2/3; split, the k = 2 experts come from the 4 chosen experts, a node
  // missed with C(2, 2) / C(4, 2) = 1/6: 2 x 5/6 = 5/3 nodes.
  //   1/3 x 1 + 2/3 x 5/3 = 1/3 + 10/9 = 13/9.
  CHECK(expected_holders_reached(deepep_grouped(8, 2, 4, 2), 2) == Approx(13.0 / 9.0));
  // A group spanning holders: E = 8 in G = 2 groups, one chosen, over 4 holders
  // of 2 (2 per group): the k = 2 experts fall on the chosen group's 2 holders
  // as E = 4 on 2 holders does: 5/3.
  CHECK(expected_holders_reached(deepep_grouped(8, 2, 2, 1), 4) == Approx(5.0 / 3.0));
  // Every group chosen: no limit (5/3 as E = 4, k = 2 on 2 nodes).
  CHECK(expected_holders_reached(deepep_grouped(4, 2, 2, 2), 2) == Approx(5.0 / 3.0));
  // Groups that straddle holders (3 groups of 2 over 2 holders of 3): priced
  // without the limit: 2 x (1 - C(3, 2) / C(6, 2)) = 2 x 4/5 = 8/5.
  CHECK(expected_holders_reached(deepep_grouped(6, 2, 3, 1), 2) == Approx(8.0 / 5.0));
  // DeepSeek-V3's routing bounds a token to topk_groups = 4 of 8 nodes.
  CHECK(expected_holders_reached(deepep_grouped(256, 8, 8, 4), 8) <= 4.0);
}

TEST_CASE("deepep_buffers and deepep_dispatch_time on two nodes of 8 (by hand)", "[cost][deepep]") {
  using moeplan::model::LinkClass;
  using moeplan::model::OpClass;
  using moeplan::testing::cost_line;
  // EP 16 on 2 nodes x 8, E = 16 experts (one a rank), k = 2, T = 8 tokens of
  // 8 bytes (d 4 x 2 B) per rank.
  const moeplan::cost::GroupShape ep{16, 8, 8, 1, 1};
  const moeplan::model::MoeSpec moe = deepep_experts(16, 2);
  const moeplan::cost::DeepepBuffers b = moeplan::cost::deepep_buffers(moe, ep, 8, 8);
  // Nodes reached: 2 x (1 - C(8, 2) / C(16, 2)) = 2 x (1 - 28/120) = 23/15;
  // network buffer 8 tokens x 23/15 x 8 B = 1472/15 B (98.13).
  CHECK(b.network_bytes == Approx(1472.0 / 15.0));
  // GPUs reached: k = 2 (one expert a rank); NVLink buffer 8 x 2 nodes x 2 x 8 B = 256 B.
  CHECK(b.nvlink_bytes == Approx(256.0));
  // The inter AlltoAll line of 16 ranks at 8 a node, 1e-3 ms per buffer byte;
  // the intra line of 8, 1e-4 ms per buffer byte, i.e. 1e-4 x 8/7 per byte on
  // NVLink, of which the on-node part moves (m - 1) / p = 7/16 of its buffer:
  // 0.5e-4 ms per buffer byte.
  moeplan::model::CostProfileSpec profile{"deepep", "deepep",
                                          {cost_line(OpClass::A2A, LinkClass::Inter, 16, 0.0, 1e-3, 8),
                                           cost_line(OpClass::A2A, LinkClass::Intra, 8, 0.0, 1e-4)},
                                          1.0};
  const moeplan::cost::CostModel costs(profile);
  // network 1472/15 x 1e-3 = 0.098133 ms; NVLink 256 x 0.5e-4 = 0.0128 ms: the network's.
  CHECK(moeplan::cost::deepep_dispatch_time(costs, ep, b).value == Approx(1.472 / 15.0));
  // The AlltoAll of the same tokens moves 8 x 2 copies x 8 B = 128 B: 0.128 ms.
  CHECK(costs.communication(OpClass::A2A, ep, 128).value == Approx(0.128));
  // Cross-check of the network part by its meaning: a rank sends a token to the
  // other node with 23/30 (each node reached with half of 23/15), 8 x 23/30 x 8
  // = 736/15 B; the line moves (p - m) / p = 1/2 of its buffer over the
  // network, so the buffer is twice that.
  CHECK(b.network_bytes == Approx(2 * 8 * (23.0 / 30.0) * 8));
}

TEST_CASE("deepep_buffers within one node: one copy per destination GPU", "[cost][deepep]") {
  // EP 4 on one node, E = 8 (2 a rank), k = 2: 13/7 GPUs reached (above); T = 8, 8 B a token.
  const moeplan::cost::GroupShape ep{4, 4, 8, 1, 2};
  const moeplan::cost::DeepepBuffers b = moeplan::cost::deepep_buffers(deepep_experts(8, 2), ep, 8, 8);
  CHECK(b.network_bytes == Approx(8 * 13.0 / 7.0 * 8));
  CHECK(b.nvlink_bytes == 0.0);
}
