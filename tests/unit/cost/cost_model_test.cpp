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

TEST_CASE("cost::CostModel prices the FSMoE Testbed-A lines exactly", "[cost]") {
  const cost::CostModel costs(io::load_profile("fsmoe-testbed-a"));
  // tools/optim.py: a2a 0.287 ms + 2.3201e-6 ms per fp32 element, measured over the 6 nodes.
  for (double bytes : {0.0, 4.0, 1048576.0, 123456788.0})
    CHECK(costs.communication(OpClass::A2A, LinkClass::Inter, 6, bytes).value ==
          Approx(0.287 + bytes / 4 * 2.3201e-6).epsilon(1e-12));
  // GEMM 4.26e-2 ms + 4.58e-11 ms per FLOP.
  CHECK(costs.compute(OpClass::Gemm, 1e12).value == Approx(4.26e-2 + 45.8).epsilon(1e-12));
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
    CHECK(costs.communication(OpClass::AllReduce, LinkClass::Inter, 1, 1e9).value == 0.0);
  }
  SECTION("a missing line is an input error naming the profile") {
    CHECK_THROWS_WITH(costs.compute(OpClass::Gemm, 1.0), Catch::Contains("profile 'p' has no gemm line on link local"));
  }
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
