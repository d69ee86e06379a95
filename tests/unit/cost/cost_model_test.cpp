#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/bus_factor.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/io/loader.hpp>

#include "../test_support.hpp"

using namespace moeplan;
using model::LinkClass;
using model::OpClass;

using moeplan::testing::cost_line;

namespace {

// A group shape written out by hand.
cost::GroupShape shape(std::int64_t size, std::int64_t per_node, std::int64_t gpus_per_node, std::int64_t nics,
                       std::int64_t concurrent) {
  return cost::GroupShape{size, per_node, gpus_per_node, nics, concurrent};
}

model::LinearCostSpec placed(model::LinearCostSpec line, std::int64_t ranks_per_node) {
  line.ranks_per_node = ranks_per_node;
  return line;
}

}  // namespace

TEST_CASE("cost::CostModel prices the FSMoE Testbed-A lines exactly where they were measured", "[cost]") {
  const cost::CostModel costs(io::load_profile("fsmoe-testbed-a"));
  // tools/optim.py: a2a 0.287 ms + 2.3201e-6 ms per fp32 element, measured over
  // the 6 nodes, one GPU each, one communicator (Testbed-A: 8 GPUs, 1 NIC per node).
  for (double bytes : {0.0, 4.0, 1048576.0, 123456788.0})
    CHECK(costs.communication(OpClass::A2A, shape(6, 1, 8, 1, 1), bytes).value ==
          Approx(0.287 + bytes / 4 * 2.3201e-6).epsilon(1e-12));
  // In training the 8 EP groups of a node (one per local rank) share its one
  // NIC: each gets 1/8, so the per-byte time is 8x the measured one.
  CHECK(costs.communication(OpClass::A2A, shape(6, 1, 8, 1, 8), 1048576.0).value ==
        Approx(0.287 + 8 * 1048576.0 / 4 * 2.3201e-6).epsilon(1e-12));
  // GEMM 4.26e-2 ms + 4.58e-11 ms per FLOP.
  CHECK(costs.compute(OpClass::Gemm, 1e12).value == Approx(4.26e-2 + 45.8).epsilon(1e-12));
}

TEST_CASE("cost::CostModel splits an AlltoAll across nodes into its network and NVLink parts", "[cost]") {
  // 8-GPU nodes with 8 NICs. Per byte crossing a link: NVLink 2.5e-9 ms
  // (400 GB/s), one GPU's NIC share 2e-8 ms (50 GB/s). The lines as nccl-tests
  // would measure them: intra over 8 GPUs moves 7/8 of the buffer on NVLink;
  // inter over 2 full nodes (alone) sends 8/16 of it over the NIC.
  const double nvlink = 2.5e-9, nic = 2e-8;
  model::CostProfileSpec p{"p",
                           "c",
                           {placed(cost_line(OpClass::A2A, LinkClass::Intra, 8, 0.01, 7.0 / 8 * nvlink), 8),
                            placed(cost_line(OpClass::A2A, LinkClass::Inter, 16, 0.02, 8.0 / 16 * nic), 8)},
                           1.0};
  const cost::CostModel costs(p);
  const double S = 64e6;  // bytes sent per rank
  SECTION("p = 8 on one node: 7/8 of the buffer over NVLink") {
    CHECK(costs.communication(OpClass::A2A, shape(8, 8, 8, 8, 1), S).value == Approx(0.01 + 7.0 / 8 * S * nvlink));
  }
  SECTION("p = 16 on two nodes: 8/16 over the NIC, 7/16 over NVLink at the same time") {
    const cost::CommLines lines = costs.lines_for(OpClass::A2A, shape(16, 8, 8, 8, 1));
    REQUIRE(lines.node_part);
    CHECK(lines.main.beta_ms_per_unit == Approx(8.0 / 16 * nic));
    CHECK(lines.node_part->beta_ms_per_unit == Approx(7.0 / 16 * nvlink));
    CHECK(costs.communication(OpClass::A2A, shape(16, 8, 8, 8, 1), S).value == Approx(0.02 + 8.0 / 16 * S * nic));
  }
  SECTION("p = 64 on eight nodes: 56/64 over the NIC") {
    CHECK(costs.communication(OpClass::A2A, shape(64, 8, 8, 8, 1), S).value == Approx(0.02 + 56.0 / 64 * S * nic));
  }
  SECTION("p = 16 strided one per node, the 8 groups of a node at once: 15/16 over a 1/8 share") {
    CHECK(costs.communication(OpClass::A2A, shape(16, 1, 8, 8, 8), S).value == Approx(0.02 + 15.0 / 16 * S * nic));
  }
  SECTION("the two parts run at once: the time is the larger, not the sum") {
    // At 0 bytes: network 0.02 ms, NVLink 0.01 ms.
    CHECK(costs.lines_for(OpClass::A2A, shape(16, 8, 8, 8, 1)).predict_ms(0) == 0.02);
  }
}

TEST_CASE("cost::CostModel divides a node's NICs among the groups that cross it", "[cost]") {
  // AllReduce measured over 2 full DGX nodes, alone: bus bandwidth = the node's
  // 8 NICs x 50 GB/s = 400 GB/s = 4e8 bytes per ms; beta = 2 x 15/16 / 4e8.
  const double node_bw = 4e8;
  model::CostProfileSpec p{
      "p", "c", {placed(cost_line(OpClass::AllReduce, LinkClass::Inter, 16, 0.03, 1.875 / node_bw), 8)}, 1.0};
  const cost::CostModel costs(p);
  SECTION("as measured") {
    CHECK(costs.communication(OpClass::AllReduce, shape(16, 8, 8, 8, 1), 1e9).value ==
          Approx(0.03 + 1e9 * 1.875 / node_bw));
  }
  SECTION("a DP group of one GPU per node: 8 such groups share the node, 50 GB/s each") {
    CHECK(costs.communication(OpClass::AllReduce, shape(16, 1, 8, 8, 8), 1e9).value ==
          Approx(0.03 + 1e9 * 1.875 / (node_bw / 8)));
  }
  SECTION("two GPUs per node over 16 nodes: 4 groups at once, 100 GB/s each; factor 2 x 31/32") {
    CHECK(costs.communication(OpClass::AllReduce, shape(32, 2, 8, 8, 4), 1e9).value ==
          Approx(0.03 + 1e9 * 1.9375 / (node_bw / 4)));
  }
  SECTION("one GPU per node running alone still drives only its own NIC") {
    CHECK(costs.communication(OpClass::AllReduce, shape(16, 1, 8, 8, 1), 1e9).value ==
          Approx(0.03 + 1e9 * 1.875 / (node_bw / 8)));
  }
  SECTION("a node with one NIC: one GPU alone gets all of it, eight groups 1/8 each") {
    // The same line read on 1-NIC nodes means 400 GB/s per node.
    CHECK(costs.communication(OpClass::AllReduce, shape(16, 1, 8, 1, 1), 1e9).value ==
          Approx(0.03 + 1e9 * 1.875 / node_bw));
    CHECK(costs.communication(OpClass::AllReduce, shape(16, 1, 8, 1, 8), 1e9).value ==
          Approx(0.03 + 1e9 * 1.875 / (node_bw / 8)));
  }
}

TEST_CASE("cost::group_shape reads a group's placement from its ranks", "[cost]") {
  model::ClusterSpec dgx;
  dgx.num_nodes = 4;
  dgx.gpus_per_node = 8;
  dgx.inter_link.ports_per_node = 8;
  // DP of 4 with stride 8 (tp x cp = 8): one GPU per node, 8 such groups per node.
  const cost::GroupShape dp = cost::strided_group_shape(4, 8, dgx);
  CHECK(dp.size == 4);
  CHECK(dp.ranks_per_node == 1);
  CHECK(dp.concurrent_groups == 8);
  CHECK(dp.link() == LinkClass::Inter);
  // EP 16 with stride 2 (etp 2): ranks 0, 2, ..., 30: 4 per node, 2 groups per node.
  const cost::GroupShape ep = cost::strided_group_shape(16, 2, dgx);
  CHECK(ep.ranks_per_node == 4);
  CHECK(ep.concurrent_groups == 2);
  // TP 8: one node.
  CHECK(cost::strided_group_shape(8, 1, dgx).link() == LinkClass::Intra);
}

TEST_CASE("cost::group_shape reads an NVLink domain larger than a node as the node of the link model", "[cost]") {
  // Two GB200 NVL72 racks: trays of 4 GPUs with 4 NICs each, 72 GPUs per NVLink domain.
  model::ClusterSpec nvl;
  nvl.num_nodes = 36;
  nvl.gpus_per_node = 4;
  nvl.nvlink_domain_gpus = 72;
  nvl.inter_link.ports_per_node = 4;
  CHECK(nvl.link_domain() == 72);
  CHECK(nvl.link_domain_ports() == 72);  // 18 trays x 4 NICs
  // TP 8 spans two trays but one domain: NVLink, 72 / 8 = 9 such groups per domain.
  const cost::GroupShape tp = cost::strided_group_shape(8, 1, nvl);
  CHECK(tp.link() == LinkClass::Intra);
  CHECK(tp.ranks_per_node == 8);
  CHECK(tp.concurrent_groups == 9);
  // The same group on trays alone (no domain field): two nodes, the inter link.
  model::ClusterSpec trays = nvl;
  trays.nvlink_domain_gpus = 0;
  CHECK(cost::strided_group_shape(8, 1, trays).link() == LinkClass::Inter);
  CHECK(cost::strided_group_shape(8, 1, trays).ranks_per_node == 4);
  // DP 2 with stride 72 (one rank per rack): across domains, the domain's 72 NICs, 72 such groups.
  const cost::GroupShape dp = cost::strided_group_shape(2, 72, nvl);
  CHECK(dp.link() == LinkClass::Inter);
  CHECK(dp.ranks_per_node == 1);
  CHECK(dp.gpus_per_node == 72);
  CHECK(dp.nics_per_node == 72);
  CHECK(dp.concurrent_groups == 72);
  // EP 144 over both racks: 72 per domain, one group.
  const cost::GroupShape ep = cost::strided_group_shape(144, 1, nvl);
  CHECK(ep.ranks_per_node == 72);
  CHECK(ep.concurrent_groups == 1);
}

TEST_CASE("cost::CostModel refuses an inter line whose placement would put it on one node", "[cost]") {
  model::CostProfileSpec p{"p", "c", {cost_line(OpClass::A2A, LinkClass::Inter, 6, 0.2, 1e-7)}, 1.0};
  const cost::CostModel costs(p);
  CHECK_THROWS_WITH(costs.communication(OpClass::A2A, shape(12, 1, 8, 1, 8), 1e6),
                    Catch::Contains("set its ranks_per_node"));
}

TEST_CASE("cost::CostModel moves a line to another group with bus-bandwidth factors", "[cost]") {
  model::CostProfileSpec p{"p",
                           "c",
                           {cost_line(OpClass::AllReduce, LinkClass::Inter, 8, 0.5, 1e-6),
                            cost_line(OpClass::A2A, LinkClass::Intra, 8, 0.1, 2e-7),
                            cost_line(OpClass::A2A, LinkClass::Intra, 2, 0.05, 1e-7)},
                           1.0};
  const cost::CostModel costs(p);
  SECTION("allreduce 2(p-1)/p: from 8 (1.75) to 16 (1.875)") {
    const cost::LinearModel l = costs.line_for(OpClass::AllReduce, LinkClass::Inter, 16);
    CHECK(l.alpha_ms == 0.5);
    CHECK(l.beta_ms_per_unit == Approx(1e-6 * 1.875 / 1.75));
  }
  SECTION("the nearest measured group is used, exact matches as measured") {
    CHECK(costs.line_for(OpClass::A2A, LinkClass::Intra, 2).beta_ms_per_unit == 1e-7);
    CHECK(costs.measured_group(OpClass::A2A, LinkClass::Intra, 3) == 2);  // |log 3/2| < |log 3/8|
    CHECK(costs.measured_group(OpClass::A2A, LinkClass::Intra, 6) == 8);
    // alltoall (p-1)/p: 3 ranks from the 2-rank line: 1e-7 x (2/3) / (1/2).
    CHECK(costs.line_for(OpClass::A2A, LinkClass::Intra, 3).beta_ms_per_unit == Approx(1e-7 * (2.0 / 3) / 0.5));
  }
  SECTION("a group of one rank moves nothing") {
    CHECK(costs.predict(OpClass::AllReduce, LinkClass::Inter, 1, 1e9).value == 0.0);
    CHECK(costs.communication(OpClass::AllReduce, shape(1, 1, 8, 8, 8), 1e9).value == 0.0);
  }
  SECTION("a missing line is an input error naming the profile") {
    CHECK_THROWS_WITH(costs.compute(OpClass::Gemm, 1.0), Catch::Contains("profile 'p' has no gemm line on link local"));
  }
}

TEST_CASE("cost::CostModel::broadcast moves like an all-gather of n/(n-1) its size", "[cost]") {
  // One intra all-gather line, measured on 4 ranks of one 8-GPU node: 0.01 ms
  // + 1e-6 ms per byte of output. Its bus bandwidth (nccl-tests
  // doc/PERFORMANCE.md: busbw = algbw (n-1)/n for an all-gather) is
  // 1 / 1e-6 x 3/4 = 750,000 bytes per ms. A broadcast has busbw = algbw: all
  // of it leaves the root, t = S / busbw.
  const cost::CostModel costs(
      model::CostProfileSpec{"p", "c", {cost_line(OpClass::AllGather, LinkClass::Intra, 4, 0.01, 1e-6)}, 1.0});
  SECTION("4 ranks: 3000 bytes in 3000 / 750,000 = 0.004 ms after the line's 0.01 ms") {
    // As the all-gather of output 3000 x 4/3 = 4000 bytes on the line as measured.
    CHECK(costs.broadcast(shape(4, 4, 8, 1, 2), 3000).value == Approx(0.014).epsilon(1e-12));
  }
  SECTION("2 ranks: the same bus bandwidth, so the same 0.014 ms") {
    // Output 3000 x 2/1 = 6000 bytes on the line moved to 2 ranks: slope
    // 1e-6 x (1/2) / (3/4) = 2/3 x 1e-6, so 6000 x 2/3 x 1e-6 = 0.004 ms.
    CHECK(costs.broadcast(shape(2, 2, 8, 1, 4), 3000).value == Approx(0.014).epsilon(1e-12));
  }
  SECTION("a group of one launches nothing") { CHECK(costs.broadcast(shape(1, 1, 8, 1, 8), 3000).value == 0.0); }
}

TEST_CASE("cost::bus_factor follows nccl-tests", "[cost]") {
  CHECK(cost::bus_factor(OpClass::AllReduce, 4) == 1.5);
  CHECK(cost::bus_factor(OpClass::AllGather, 4) == 0.75);
  CHECK(cost::bus_factor(OpClass::ReduceScatter, 4) == 0.75);
  CHECK(cost::bus_factor(OpClass::A2A, 4) == 0.75);
  CHECK(cost::bus_factor(OpClass::P2P, 4) == 1.0);
}

TEST_CASE("cost::link_class_of places a group on the intra or inter link", "[cost]") {
  CHECK(cost::link_class_of({0, 1, 2, 3}, 8) == LinkClass::Intra);
  CHECK(cost::link_class_of({8, 15}, 8) == LinkClass::Intra);
  CHECK(cost::link_class_of({7, 8}, 8) == LinkClass::Inter);
  CHECK(cost::link_class_of({0, 8, 16}, 8) == LinkClass::Inter);
}

TEST_CASE("cost::CostModel prices a fused attention core on its most specific attention line", "[cost][attention]") {
  using model::AttentionPass;
  model::CostProfileSpec p;
  p.name = "attention-lines";
  p.cluster = "x";
  const auto attention = [](double alpha, double beta, std::optional<AttentionPass> pass,
                            std::optional<std::int64_t> head_dim) {
    model::LinearCostSpec c = cost_line(OpClass::Attention, LinkClass::Local, 1, alpha, beta);
    c.attention_pass = pass;
    c.head_dim = head_dim;
    return c;
  };
  p.costs = {attention(1.0, 1e-3, std::nullopt, std::nullopt),           // generic
             attention(2.0, 2e-3, AttentionPass::Forward, std::nullopt),  // forward, any head dim
             attention(3.0, 3e-3, std::nullopt, 192),                     // both passes, head dim 192
             attention(4.0, 4e-3, AttentionPass::Backward, 192)};         // backward, head dim 192
  const cost::CostModel costs(p);
  model::ModelSpec m;
  m.head_dim = 128;
  // 1000 FLOPs on each line by hand: alpha + 1000 x beta.
  // Forward at head dim 128: the forward line (2 + 2).
  CHECK(costs.attention_core(m, 8, 8, 1000, AttentionPass::Forward).value == Approx(4.0));
  // Backward at 128: no backward line for it, no head-dim line: the generic one (1 + 1).
  CHECK(costs.attention_core(m, 8, 8, 1000, AttentionPass::Backward).value == Approx(2.0));
  m.head_dim = 192;
  // Backward at 192: its own line (4 + 4).
  CHECK(costs.attention_core(m, 8, 8, 1000, AttentionPass::Backward).value == Approx(8.0));
  // Forward at 192: the pass outranks the head dim, so the forward line (2 + 2), not the 192 line (3 + 3).
  CHECK(costs.attention_core(m, 8, 8, 1000, AttentionPass::Forward).value == Approx(4.0));
  // compute() and the other families' attention() keep the generic line (1 + 1).
  CHECK(costs.compute(OpClass::Attention, 1000).value == Approx(2.0));
  // Without the forward line, forward at 192 takes the head dim's line (3 + 3).
  p.costs.erase(p.costs.begin() + 1);
  CHECK(cost::CostModel(p).attention_core(m, 8, 8, 1000, AttentionPass::Forward).value == Approx(6.0));
  // A core no line covers (only MLA's backward line, a head dim 128 forward) is an input error naming costs.
  p.costs = {attention(4.0, 4e-3, AttentionPass::Backward, 192)};
  m.head_dim = 128;
  try {
    (void)cost::CostModel(p).attention_core(m, 8, 8, 1000, AttentionPass::Forward);
    FAIL("priced a core without a line");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.field() == "costs");
    CHECK_THAT(e.reason(), Catch::Contains("no ATTENTION line for the forward pass at head dim 128"));
  }
}
