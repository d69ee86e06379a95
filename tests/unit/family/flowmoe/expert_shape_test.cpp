#include <catch2/catch.hpp>

#include <string>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/family/flowmoe/builder.hpp>

#include "../../test_support.hpp"

using namespace moeplan;


namespace {
double task_ms(const dag::TaskGraph& g, const std::string& name) {
  for (dag::TaskId t = 0; t < g.size(); ++t)
    if (g.name(t) == name) return g.duration_ms(t);
  FAIL("no task " << name);
  return 0;
}
}  // namespace

// FlowMoE's gpt2-tiny-moe on 16 GPUs (EP 16, 16 experts: one per rank), B = 4 x
// 256 tokens, top-2, capacity 1.0: 2048 slots per expert; d = 256, GELU
// hidden 512. Forward GEMMs: up [2048 x 256] x [256 x 512], down
// [2048 x 512] x [512 x 256], 536,870,912 FLOPs each.
// Shape model: 48 units of 1e12 FLOP/s at efficiency 0.5 (48e12 peak), 128 x
// 128 tiles, 1e12 B/s, the model's 4-byte elements, 0.01 ms; the line is its full-rate
// equivalent, 0.01 ms + FLOPs / 24e12 FLOP/s (4.1667e-11 ms per FLOP).
// - up: 16 x 4 = 64 tiles = 2 waves (1.33 full) of 2 x 128 x 128 x 256 FLOPs
//   at 5e11 = 0.033554432 ms; down: 16 x 2 = 32 tiles < 48, split_k
//   floor(48 / 32) = 1, 1 wave of 2 x 128 x 128 x 512 = 0.033554432 ms.
//   Forward 2 x (0.01 + 0.033554432) = 0.087108864 ms; by the line
//   2 x (0.01 + 0.0223696213) = 0.0647392427 ms: the small experts are 1.5x
//   slower in their FLOP part (2 waves for 1.33, 1 for 0.67).
// - backward: input gradients [2048 x 256] (32 tiles, 1 wave, k 512) and
//   [2048 x 512] (64 tiles, 2 waves, k 256): 0.033554432 ms each; weight
//   gradients [256 x 512] and [512 x 256], 8 tiles, split_k 6: one wave of
//   k = 2048 / 6: 0.0223696213 ms each. 4 x 0.01 + 2 x 0.033554432 +
//   2 x 0.0223696213 = 0.1518481067 ms; the line 2 x (0.01 + 2 x
//   0.0223696213) = 0.1094784853 ms.
TEST_CASE("FlowMoE prices expert GEMMs by shape when the profile has the block", "[sched]") {
  model::ScenarioSpec s = io::load_scenario("flowmoe-gpt2-tiny-moe-c1");
  s.profile->costs.push_back(testing::cost_line(model::OpClass::Gemm, model::LinkClass::Local, 1, 0.01, 1e3 / 24e12));
  // Replace the datasheet gemm line (and any block) by the hand-made ones.
  std::erase_if(s.profile->costs, [](const model::LinearCostSpec& c) {
    return c.op == model::OpClass::Gemm && c.beta_ms_per_unit != 1e3 / 24e12;
  });
  s.profile->gemm_shape.reset();
  const flowmoe::FlowMoeKnobs knobs{"none", 1, 4 << 20, false};
  const auto line = flowmoe::build_flowmoe(s, cost::CostModel(*s.profile), knobs);
  CHECK(task_ms(line.graph, "fwd L0 experts m0") == Approx(0.0647392427));
  CHECK(task_ms(line.graph, "bwd L0 experts m0") == Approx(0.1094784853));

  model::GemmShapeModelSpec g;
  g.units = 48;
  g.tile_m = g.tile_n = 128;
  g.peak_flops_per_s = 48e12;
  g.memory_bytes_per_s = 1e12;
  g.efficiency = 0.5;
  g.alpha_ms = 0.01;
  s.profile->gemm_shape = g;
  const auto shaped = flowmoe::build_flowmoe(s, cost::CostModel(*s.profile), knobs);
  CHECK(task_ms(shaped.graph, "fwd L0 experts m0") == Approx(0.087108864));
  CHECK(task_ms(shaped.graph, "bwd L0 experts m0") == Approx(0.1518481067));
}
