// FP8 recipes in the cost model (docs/cost-model.md, "FP8"): the casts' bytes,
// the attention block's linear layers, and FP8 GEMMs in the shape model.
#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/fp8_casts.hpp>
#include <moeplan/cost/gemm_shape_model.hpp>
#include <moeplan/model/model_stats.hpp>

#include "../test_support.hpp"

using namespace moeplan;

TEST_CASE("cost::fp8_cast_bytes: read BF16, write row- and column-wise FP8, plus each recipe's scales", "[cost][fp8]") {
  // 2 B read + 1 B + 1 B written; current scaling reads the tensor once more
  // for its amax (+2); blockwise adds an fp32 scale per 128 elements per copy
  // (2 x 4 / 128 = 0.0625); MXFP8 an E8M0 byte per 32 per copy (2 / 32 = 0.0625).
  CHECK(cost::fp8_cast_bytes(model::Precision::Bf16).activation == 0);
  CHECK(cost::fp8_cast_bytes(model::Precision::Fp8Delayed).activation == 4);
  CHECK(cost::fp8_cast_bytes(model::Precision::Fp8Tensorwise).activation == 6);
  CHECK(cost::fp8_cast_bytes(model::Precision::Fp8Tensorwise).weight == 6);
  CHECK(cost::fp8_cast_bytes(model::Precision::Fp8Blockwise).activation == 4.0625);
  CHECK(cost::fp8_cast_bytes(model::Precision::Mxfp8).weight == 4.0625);
}

TEST_CASE("cost::fp8_cast_times: inputs and the weights' share forward, gradients backward", "[cost][fp8]") {
  model::CostProfileSpec p{"p", "c", {moeplan::testing::cost_line(model::OpClass::Elementwise,
                                                                   model::LinkClass::Local, 1, 0.01, 1e-6)},
                           1.0};
  const cost::CostModel costs(p);
  cost::CastElements e;
  // One GEMM [100 x 20] x [20 x 30]: inputs 2,000, gradients 3,000, weights 600.
  cost::add_cast_elements(e, {cost::GemmShape{100, 30, 20, 1, 2}});
  CHECK(e.inputs == 2000);
  CHECK(e.gradients == 3000);
  CHECK(e.weights == 600);
  // Delayed, 4 micro-batches: forward (2,000 + 600 / 4) x 4 B = 8,600 B -> 0.01 + 0.0086 ms;
  // backward 3,000 x 4 = 12,000 B -> 0.01 + 0.012 ms.
  const cost::CastTimes t = cost::fp8_cast_times(costs, model::Precision::Fp8Delayed, e, 4);
  CHECK(t.forward.value == Approx(0.0186));
  CHECK(t.backward.value == Approx(0.022));
  CHECK(cost::fp8_cast_times(costs, model::Precision::Bf16, e, 4).forward.value == 0);
  // A profile without an elementwise line cannot price the casts: it says so.
  const cost::CostModel none(model::CostProfileSpec{"q", "c", {}, 1.0});
  CHECK_THROWS_AS(cost::fp8_cast_times(none, model::Precision::Mxfp8, e, 1), Error);
}

TEST_CASE("cost::remove_fused_grouped_mlp_casts: down's input and gate's and up's output gradients", "[cost][fp8]") {
  // Two local experts of 10 rows, d 6, hidden 4, gated: gate and up
  // [10 x 6] x [6 x 4], down [10 x 4] x [4 x 6], batch 2.
  const std::vector<cost::GemmShape> routed{
      {10, 4, 6, 2, 2}, {10, 4, 6, 2, 2}, {10, 6, 4, 2, 2}};
  cost::CastElements e;
  cost::add_cast_elements(e, routed);
  // Unfused: inputs 2 x (60 + 60 + 40) = 320; gradients 2 x (40 + 40 + 60) =
  // 280; weights 2 x (24 + 24 + 24) = 144.
  CHECK(e.inputs == 320);
  CHECK(e.gradients == 280);
  CHECK(e.weights == 144);
  cost::remove_fused_grouped_mlp_casts(e, routed);
  // Fused: the tokens' cast before gate and up stays (2 x 120 = 240; the
  // model counts gate's and up's inputs apart), down's input (2 x 40) goes;
  // down's output gradient stays (2 x 60 = 120), gate's and up's go; the weights stay.
  CHECK(e.inputs == 240);
  CHECK(e.gradients == 120);
  CHECK(e.weights == 144);
  std::vector<cost::GemmShape> gelu{routed[0], routed[2]};
  CHECK_THROWS_AS(cost::remove_fused_grouped_mlp_casts(e, gelu), Error);
}

TEST_CASE("cost::attention_linear_gemms: the projections' FLOPs are the attention weights' (second formulation)",
          "[cost][fp8]") {
  // 2 x tokens x the matrix weights / tp (model::attention_matmul_weights): the
  // GEMM list must do exactly that work, for MHA/GQA and for MLA with and without q_lora.
  model::ModelSpec gqa;
  gqa.dtype_bytes = 2;
  gqa.d_model = 64;
  gqa.num_heads = 8;
  gqa.num_kv_heads = 2;
  gqa.head_dim = 8;
  model::ModelSpec mla = gqa;
  mla.num_kv_heads = 8;
  mla.head_dim = 12;
  mla.mla = model::MlaSpec{24, 16, 8, 4, 8};
  model::ModelSpec mla_no_q = mla;
  mla_no_q.mla->q_lora_rank = std::nullopt;
  for (const model::ModelSpec* m : {&gqa, &mla, &mla_no_q}) {
    for (double tp : {1.0, 2.0, 4.0}) {
      double flops = 0;
      for (const cost::GemmShape& g : cost::attention_linear_gemms(*m, 32, tp)) flops += cost::gemm_flops(g);
      CHECK(flops == Approx(2.0 * 32 * static_cast<double>(model::attention_matmul_weights(*m).total()) / tp));
    }
  }
  // GQA by hand: QKV [32 x 64] x [64 x (8 + 2 x 2) x 8 = 96], O [32 x 64] x [64 x 64].
  const std::vector<cost::GemmShape> g = cost::attention_linear_gemms(gqa, 32, 1);
  REQUIRE(g.size() == 2);
  CHECK(g[0].n == 96);
  CHECK(g[0].k == 64);
  CHECK(g[1].k == 64);
}

TEST_CASE("cost::gemm_time_ms: FP8 operands run at the FP8 peak and move one byte each", "[cost][fp8]") {
  // 4 units, tile 128 x 128, BF16 peak 4e12, FP8 peak 8e12, efficiency 0.5, 1e12 B/s.
  model::GemmShapeModelSpec g;
  g.units = 4;
  g.tile_m = g.tile_n = 128;
  g.peak_flops_per_s = 4e12;
  g.peak_flops_per_s_fp8 = 8e12;
  g.memory_bytes_per_s = 1e12;
  g.efficiency = 0.5;
  g.alpha_ms = 0.01;
  // 256 x 256 x 1024: one wave of 4 tiles, 33,554,432 FLOPs each at 4e12 / 4 x 0.5
  // = 5e11 FLOP/s per unit in BF16 (0.067108864 ms) and 8e12 / 4 x 0.5 = 1e12 in FP8 (0.033554432 ms).
  cost::GemmShape s{256, 256, 1024, 1, 2};
  CHECK(cost::gemm_compute_ms(g, s) == Approx(0.067108864));
  s.fp8 = true;
  CHECK(cost::gemm_compute_ms(g, s) == Approx(0.033554432));
  // Memory: A and B at 1 B, C written at 2 B: (2 x 262,144) x 1 + 65,536 x 2 = 655,360 B.
  CHECK(cost::gemm_memory_ms(g, s) == Approx(0.00065536));
  // The gradients' GEMMs stay FP8.
  CHECK(cost::input_gradient_shape(s).fp8);
  CHECK(cost::weight_gradient_shape(s).fp8);
  // A shape model without an FP8 peak refuses FP8 GEMMs by name.
  g.peak_flops_per_s_fp8 = 0;
  try {
    cost::gemm_compute_ms(g, s);
    FAIL("priced an FP8 GEMM without an FP8 peak");
  } catch (const Error& e) {
    CHECK(e.field() == "gemm_shape.peak_tflops_fp8");
  }
}
