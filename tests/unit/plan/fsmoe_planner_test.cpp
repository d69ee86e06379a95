#include <catch2/catch.hpp>

#include <numeric>

#include <moeplan/io/loader.hpp>
#include <moeplan/plan/fsmoe_planner.hpp>
#include <moeplan/sched/fsmoe.hpp>

using namespace moeplan;

TEST_CASE("plan::partition_gradients conserves the gradients and repeats bit for bit", "[plan][fsmoe]") {
  const model::ScenarioSpec s = io::load_scenario("fsmoe-testbed-b-gpt2-xl");
  const cost::CostModel costs(*s.profile);
  const auto allowed = plan::allowed_degrees(plan::expert_capacity_tokens(s));
  const plan::GradientPartition a = plan::partition_gradients(s, costs, allowed, 4);
  const plan::GradientPartition b = plan::partition_gradients(s, costs, allowed, 4);
  CHECK(a.during_moe_bytes == b.during_moe_bytes);
  CHECK(a.during_dense_bytes == b.during_dense_bytes);
  CHECK(a.objective_ms == b.objective_ms);
  double total = 0, placed = a.tail_bytes;
  for (std::int32_t layer = 0; layer < s.model.num_layers; ++layer)
    total += sched::generalized_layer_gradient_bytes(s, layer);
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
  plan::EvolutionSettings none;
  none.generations = 0;
  none.population = 4;
  CHECK(a.objective_ms <= plan::partition_gradients(s, costs, allowed, 4, none).objective_ms + 1e-9);
}

TEST_CASE("plan::plan_fsmoe orders FSMoE's knobs and reports every schedule", "[plan][fsmoe]") {
  const model::ScenarioSpec s = io::load_scenario("fsmoe-testbed-a-gpt2-xl");
  const cost::CostModel costs(*s.profile);
  const plan::FsMoePlan p = plan::plan_fsmoe(s, costs, sched::fsmoe_schedules());
  REQUIRE(p.schedules.size() == 6);
  CHECK(p.degrees.forward.r >= 1);
  CHECK(p.degrees.backward.r >= 1);
  CHECK(p.partition.degree_backward.size() == static_cast<std::size_t>(s.model.num_layers));
  // none runs everything in sequence: the FSMoE schedules can only be as fast or faster.
  CHECK(p.schedules.back().iteration_ms < p.schedules.front().iteration_ms);
  // The closed-form degree is Algorithm 1's for the forward layer model.
  const auto allowed = plan::allowed_degrees(plan::expert_capacity_tokens(s));
  CHECK(p.degrees.forward.t_moe_ms ==
        Approx(plan::brute_force_degree(plan::fsmoe_layer_model(s, costs, false), allowed).t_moe_ms));
}

TEST_CASE("plan::choose_degrees in released-solver mode stays in {1, 2, 4, 8}", "[plan][fsmoe]") {
  const model::ScenarioSpec s =
      io::load_scenario("fsmoe-testbed-a-gpt2-xl", {{"schedule.fsmoe_released_solver_rules", "true"}});
  const cost::CostModel costs(*s.profile);
  const plan::FsMoePlan p = plan::plan_fsmoe(s, costs, {"fsmoe"});
  for (std::int64_t r : p.partition.degree_backward) CHECK((r == 1 || r == 2 || r == 4 || r == 8));
  CHECK((p.degrees.forward.r == 1 || p.degrees.forward.r == 2 || p.degrees.forward.r == 4 || p.degrees.forward.r == 8));
}
