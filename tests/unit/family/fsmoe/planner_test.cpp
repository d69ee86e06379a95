#include <catch2/catch.hpp>

#include <cmath>

#include <numeric>

#include <moeplan/io/loader.hpp>
#include <moeplan/family/fsmoe/planner.hpp>
#include <moeplan/plan/sweep.hpp>
#include <moeplan/family/fsmoe/builder.hpp>

#include "../../test_support.hpp"

using namespace moeplan;
using model::LinkClass;
using model::OpClass;

TEST_CASE("fsmoe::partition_gradients conserves the gradients and repeats bit for bit", "[plan][fsmoe]") {
  const model::ScenarioSpec s = io::load_scenario("fsmoe-testbed-b-gpt2-xl");
  const cost::CostModel costs(*s.profile);
  const auto allowed = fsmoe::allowed_degrees(fsmoe::expert_capacity_tokens(s));
  const fsmoe::GradientPartition a = fsmoe::partition_gradients(s, costs, allowed, 4);
  const fsmoe::GradientPartition b = fsmoe::partition_gradients(s, costs, allowed, 4);
  CHECK(a.during_moe_bytes == b.during_moe_bytes);
  CHECK(a.during_dense_bytes == b.during_dense_bytes);
  CHECK(a.objective_ms == b.objective_ms);
  double total = 0, placed = a.tail_bytes;
  for (std::int32_t layer = 0; layer < s.model.num_layers; ++layer)
    total += fsmoe::generalized_layer_gradient_bytes(s, layer);
  for (std::size_t i = 0; i < a.during_moe_bytes.size(); ++i) {
    placed += a.during_moe_bytes[i] + a.during_dense_bytes[i];
    CHECK(a.during_moe_bytes[i] >= 0);
    CHECK(a.during_dense_bytes[i] >= 0);
  }
  CHECK(placed == Approx(total).epsilon(1e-9));
  // The last layer's backward comes first: nothing has been produced yet to overlap with it.
  CHECK(a.step1_bytes.back() == 0.0);
  CHECK(a.step2_bytes.back() == 0.0);
  // Step 2 never makes the objective worse than Step 1 alone (the DE starts from it).
  fsmoe::EvolutionSettings none;
  none.generations = 0;
  none.population = 4;
  CHECK(a.objective_ms <= fsmoe::partition_gradients(s, costs, allowed, 4, none).objective_ms + 1e-9);
}

TEST_CASE("fsmoe::partition_gradients Step 1 fills each layer's overlappable time (Eq. 3) and carries the rest (Eq. 4)",
          "[plan][fsmoe]") {
  // Three generalized layers of the Table 4 model on Testbed-B (TP = ETP 4, DP
  // = EP 8, one rank per node in DP and EP). Every line but the AllReduce is a
  // pure startup, so each overlappable time is a sum of alphas.
  model::ScenarioSpec s = io::load_scenario("fsmoe-table4-testbed-b", {{"model.num_layers", "3"}});
  auto in_layout = [](model::LinearCostSpec line) {
    line.concurrent_groups = 4;  // the 4 DP (EP) groups of a 4-GPU node
    return line;
  };
  using moeplan::testing::cost_line;
  s.profile = model::CostProfileSpec{"step1",
                                     s.cluster.name,
                                     {cost_line(OpClass::Gemm, LinkClass::Local, 1, 0.1, 0),
                                      cost_line(OpClass::Attention, LinkClass::Local, 1, 1.0, 0),
                                      cost_line(OpClass::AllGather, LinkClass::Intra, 4, 0.05, 0),
                                      cost_line(OpClass::ReduceScatter, LinkClass::Intra, 4, 0.05, 0),
                                      in_layout(cost_line(OpClass::A2A, LinkClass::Inter, 8, 0.3, 0, 1)),
                                      in_layout(cost_line(OpClass::AllReduce, LinkClass::Inter, 8, 0.2, 1e-6, 1))},
                                     1.0};
  const cost::CostModel costs(*s.profile);
  // Gradients per layer (fp32): attention 4 x 1024^2 / tp 4 + router 1024 x 8
  // experts = 1,048,576 + 8,192 = 1,056,768 parameters, G = 4,227,072 bytes.
  const double G = 4'227'072;
  REQUIRE(fsmoe::generalized_layer_gradient_bytes(s, 0) == G);
  // t_olp,moe at r = 1 (section 5.2), backward: t_exp = 2 GEMMs x 0.1 ms,
  // doubled = 0.4 ms; t_a2a = 0.3, t_ag = t_rs = 0.05. Q1 (0.3 > 0.05) and Q2
  // (1 x 0.4 > 0) hold, Q5 (0 > 0.4 + 0.1) does not: Case 2, so
  // t_olp,moe = r t_exp + t_ag + t_rs - 2 (r - 1) t_a2a = 0.4 + 0.05 + 0.05 = 0.5 ms.
  // t_olp,dense = attention 1.0 + gate 0.1 + TP AllGather 0.05 + TP
  // ReduceScatter 0.05 = 1.2 ms; t_olp = 1.7 ms.
  // AR line: t(n) = 0.2 + n x 1e-6 ms, g_inv(t) = (t - 0.2) / 1e-6 bytes.
  // What fits in a layer: g_inv(1.7) = 1,500,000 bytes, of which
  // g_inv(0.5) = 300,000 in the MoE part and the other 1,200,000 in the dense part.
  // Backward order 2, 1, 0:
  //   layer 2: nothing pending yet, n_first = 0; pending G = 4,227,072.
  //   layer 1: t(G) = 4.427 > 1.7, n_first = g_inv(1.7) = 1,500,000 (Eq. 3);
  //            carried 2,727,072 + layer 1's G = 6,954,144 pending (Eq. 4).
  //   layer 0: n_first = 1,500,000; pending 5,454,144 + G = 9,681,216, the tail.
  fsmoe::EvolutionSettings step1;
  step1.step2 = false;
  const fsmoe::GradientPartition p = fsmoe::partition_gradients(s, costs, {1}, 1, step1);
  REQUIRE(p.step1_bytes.size() == 3);
  const std::vector<double> first{1'500'000, 1'500'000, 0};
  const std::vector<double> moe{300'000, 300'000, 0};
  const std::vector<double> dense{1'200'000, 1'200'000, 0};
  for (std::size_t layer = 0; layer < 3; ++layer) {
    INFO("layer " << layer);
    CHECK(p.step1_bytes[layer] == Approx(first[layer]).margin(1e-3));
    CHECK(p.step2_bytes[layer] == 0.0);
    CHECK(p.during_moe_bytes[layer] == Approx(moe[layer]).margin(1e-3));
    CHECK(p.during_dense_bytes[layer] == Approx(dense[layer]).margin(1e-3));
    CHECK(p.degree_backward[layer] == 1);
  }
  CHECK(p.tail_bytes == Approx(9'681'216).margin(1e-3));
}

TEST_CASE("fsmoe::plan_fsmoe orders FSMoE's knobs and reports every schedule", "[plan][fsmoe]") {
  const model::ScenarioSpec s = io::load_scenario("fsmoe-testbed-a-gpt2-xl");
  const cost::CostModel costs(*s.profile);
  const fsmoe::FsMoePlan p = fsmoe::plan_fsmoe(s, costs, fsmoe::fsmoe_schedules());
  REQUIRE(p.schedules.size() == 6);
  CHECK(p.degrees.forward.r >= 1);
  CHECK(p.degrees.backward.r >= 1);
  CHECK(p.partition.degree_backward.size() == static_cast<std::size_t>(s.model.num_layers));
  // none runs everything in sequence: the FSMoE schedules can only be as fast or faster.
  CHECK(p.schedules.back().iteration_ms < p.schedules.front().iteration_ms);
  // The closed-form degree is Algorithm 1's for the forward layer model.
  const auto allowed = fsmoe::allowed_degrees(fsmoe::expert_capacity_tokens(s));
  CHECK(p.degrees.forward.t_moe_ms ==
        Approx(fsmoe::brute_force_degree(fsmoe::fsmoe_layer_model(s, costs, false), allowed).t_moe_ms));
}

TEST_CASE("fsmoe::choose_degrees in released-solver mode stays in {1, 2, 4, 8}", "[plan][fsmoe]") {
  const model::ScenarioSpec s =
      io::load_scenario("fsmoe-testbed-a-gpt2-xl", {{"schedule.fsmoe_released_solver_rules", "true"}});
  const cost::CostModel costs(*s.profile);
  const fsmoe::FsMoePlan p = fsmoe::plan_fsmoe(s, costs, {"fsmoe"});
  for (std::int64_t r : p.partition.degree_backward) CHECK((r == 1 || r == 2 || r == 4 || r == 8));
  CHECK((p.degrees.forward.r == 1 || p.degrees.forward.r == 2 || p.degrees.forward.r == 4 || p.degrees.forward.r == 8));
}

TEST_CASE("plan::evaluate_point reports the gradient bytes each FSMoE schedule overlaps with layers", "[plan][fsmoe]") {
  // The Table 4 model has two layers: layer 1's gradients can hide in layer 0's
  // backward, so FSMoE's partition is not empty; only fsmoe and fsmoe-no-iio use it.
  const model::ScenarioSpec s = io::load_scenario("fsmoe-table4-testbed-b");
  const cost::CostModel costs(*s.profile);
  const fsmoe::FsMoePlan p = fsmoe::plan_fsmoe(s, costs, {});
  // The partition in whole bytes per generalized layer, as a plan file carries it.
  std::vector<std::int64_t> partition;
  double total = 0;
  for (std::size_t i = 0; i < p.partition.during_moe_bytes.size(); ++i) {
    partition.push_back(std::llround(p.partition.during_moe_bytes[i] + p.partition.during_dense_bytes[i]));
    total += static_cast<double>(partition.back());
  }
  REQUIRE(total > 0);
  const std::vector<plan::PointResult> point = plan::evaluate_point(s, costs, {});
  REQUIRE(point.size() == fsmoe::fsmoe_schedules().size());
  for (const plan::PointResult& r : point) {
    INFO(r.evaluation.schedule);
    const bool partitioned = r.evaluation.schedule == "fsmoe" || r.evaluation.schedule == "fsmoe-no-iio";
    CHECK(r.knobs.grad_partition_bytes == (partitioned ? partition : std::vector<std::int64_t>{}));
    // Each schedule's own degrees: the closed forms' for the partitioned ones,
    // Tutel's adaptive r for the other chunked ones, 1 for none.
    const std::int64_t backward = partitioned ? p.degrees.backward.r : r.evaluation.schedule == "none" ? 1 : p.tutel_degree;
    CHECK(r.knobs.degree_backward == backward);
  }
}
