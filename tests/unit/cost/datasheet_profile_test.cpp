#include <catch2/catch.hpp>

#include <moeplan/cost/bus_factor.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/datasheet_profile.hpp>
#include <moeplan/io/loader.hpp>

using namespace moeplan;

TEST_CASE("cost::datasheet_profile derives lines from the cluster's datasheet", "[cost]") {
  const model::ClusterSpec dgx = io::load_cluster("dgx-h100");
  const model::CostProfileSpec p = cost::datasheet_profile(dgx, "x", {});
  const cost::CostModel costs(p);
  // GEMM at 989.5 TFLOP/s x 0.6: 1e12 FLOPs take 1e3 / (989.5e12 x 0.6) x 1e12 ms + 0.01 ms startup.
  CHECK(costs.compute(model::OpClass::Gemm, 1e12).value == Approx(0.01 + 1e3 / (989.5 * 0.6)));
  // Intra allreduce over 8 GPUs: busbw = 450 GB/s x 0.8 = 360 GB/s; factor 2 x 7/8.
  CHECK(costs.predict(model::OpClass::AllReduce, model::LinkClass::Intra, 8, 1e9).value ==
        Approx(0.015 + 1e9 * 1.75 / 360e9 * 1e3));
  // Inter ring collectives: the node's 8 NICs x 50 GB/s x 0.8 = 320 GB/s bus bandwidth.
  const std::int64_t g = dgx.world_size();  // 1024 GPUs on 128 nodes
  CHECK(costs.predict(model::OpClass::AllReduce, model::LinkClass::Inter, g, 1e9).value ==
        Approx(0.03 + 1e9 * cost::bus_factor(model::OpClass::AllReduce, g) / 320e9 * 1e3));
  // Inter AlltoAll: each GPU's 1/8 of the NICs carries the (g - 8) / g of its data bound off-node:
  // busbw = (g - 1) / (g - 8) x 320 / 8 GB/s.
  const double a2a_busbw = (1023.0 / 1016.0) * 320e9 / 8;
  CHECK(costs.predict(model::OpClass::A2A, model::LinkClass::Inter, g, 1e9).value ==
        Approx(0.03 + 1e9 * cost::bus_factor(model::OpClass::A2A, g) / a2a_busbw * 1e3));
}

TEST_CASE("bundled datasheet profiles are what the generator makes today", "[cost][zoo]") {
  // calibration/profiles/<cluster>-datasheet.textproto were written by
  // `moeplan datasheet-profile`; a change of formula must regenerate them.
  const std::pair<const char*, cost::ComputeDtype> bundled[] = {
      {"foldmoe-g5", cost::ComputeDtype::Half},       {"dgx-h100", cost::ComputeDtype::Half},
      {"flowmoe-cluster1", cost::ComputeDtype::Fp32}, {"flowmoe-cluster2", cost::ComputeDtype::Fp32},
      {"fsmoe-testbed-a", cost::ComputeDtype::Fp32},  {"fsmoe-testbed-b", cost::ComputeDtype::Fp32}};
  for (const auto& [cluster, dtype] : bundled) {
    INFO(cluster);
    cost::DatasheetAssumptions assumptions;
    assumptions.dtype = dtype;
    const model::CostProfileSpec made =
        cost::datasheet_profile(io::load_cluster(cluster), std::string(cluster) + "-datasheet", assumptions);
    const model::CostProfileSpec stored = io::load_profile(std::string(cluster) + "-datasheet");
    REQUIRE(made.costs.size() == stored.costs.size());
    for (std::size_t i = 0; i < made.costs.size(); ++i) {
      CHECK(made.costs[i].op == stored.costs[i].op);
      CHECK(made.costs[i].group == stored.costs[i].group);
      CHECK(made.costs[i].alpha_ms == stored.costs[i].alpha_ms);
      CHECK(made.costs[i].beta_ms_per_unit == stored.costs[i].beta_ms_per_unit);
    }
  }
}
