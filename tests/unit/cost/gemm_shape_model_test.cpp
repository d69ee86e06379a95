#include <catch2/catch.hpp>

#include <limits>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/datasheet_profile.hpp>
#include <moeplan/cost/expert_pricing.hpp>
#include <moeplan/cost/gemm_shape_fit.hpp>
#include <moeplan/cost/gemm_shape_model.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/validate.hpp>

#include "../test_support.hpp"

using namespace moeplan;


namespace {
// 4 units of 1e12 FLOP/s each at efficiency 0.5 (5e11 FLOP/s per unit), tiles
// 128 x 128, 1e12 B/s, 0.01 ms startup; the shapes below carry 2-byte elements.
model::GemmShapeModelSpec toy() {
  model::GemmShapeModelSpec g;
  g.units = 4;
  g.tile_m = 128;
  g.tile_n = 128;
  g.peak_flops_per_s = 4e12;
  g.memory_bytes_per_s = 1e12;
  g.efficiency = 0.5;
  g.alpha_ms = 0.01;
  return g;
}
}  // namespace

TEST_CASE("cost::gemm_time_ms: roofline with wave quantization", "[cost]") {
  const model::GemmShapeModelSpec g = toy();
  SECTION("a 128-multiple shape filling exactly one wave") {
    // 256 x 256 output = 2 x 2 = 4 tiles on 4 units: one wave. Each tile does
    // 2 x 128 x 128 x 1024 = 33,554,432 FLOPs at 5e11 FLOP/s = 6.7108864e-5 s.
    // Memory: (256 x 1024 + 1024 x 256 + 256 x 256) x 2 B = 1,179,648 B at 1e12 B/s
    // = 0.00118 ms, below compute. t = 0.01 + 0.067108864 ms.
    const cost::GemmShape s{256, 256, 1024, 1, 2};
    CHECK(cost::output_tiles(s, 128, 128) == 4);
    CHECK(cost::gemm_compute_ms(g, s) == Approx(0.067108864));
    CHECK(cost::gemm_memory_ms(g, s) == Approx(0.001179648));
    CHECK(cost::gemm_time_ms(g, s) == Approx(0.077108864));
  }
  SECTION("one row more starts a tile row: a whole wave more") {
    // 257 rows: 3 x 2 = 6 tiles, 2 waves: twice the compute for 0.4% more FLOPs.
    const cost::GemmShape s{257, 256, 1024, 1, 2};
    CHECK(cost::output_tiles(s, 128, 128) == 6);
    CHECK(cost::gemm_time_ms(g, s) == Approx(0.01 + 2 * 0.067108864));
  }
  SECTION("a batch of products shares the waves") {
    // 3 products of one tile each: 3 tiles, one wave; 5: two waves.
    CHECK(cost::gemm_time_ms(g, {128, 128, 1024, 3, 2}) == Approx(0.01 + 0.067108864));
    CHECK(cost::gemm_time_ms(g, {128, 128, 1024, 5, 2}) == Approx(0.01 + 2 * 0.067108864));
  }
  SECTION("a skinny GEMM on slow memory is memory-bound") {
    // 128 x 128 output, k = 8: one tile of 2 x 128 x 128 x 8 = 262,144 FLOPs on
    // one unit... but 1 tile < 4 units splits k in floor(4 / 1) = 4: 4 slices of
    // k = 2, one wave of 65,536 FLOPs = 1.31072e-7 s. Memory at 1e10 B/s:
    // (128 x 8 + 8 x 128 + 128 x 128) x 2 = 36,864 B = 3.6864e-6 s, the larger.
    model::GemmShapeModelSpec slow = g;
    slow.memory_bytes_per_s = 1e10;
    const cost::GemmShape s{128, 128, 8, 1, 2};
    CHECK(cost::split_k(1, 4) == 4);
    CHECK(cost::gemm_compute_ms(slow, s) == Approx(1.31072e-4));
    CHECK(cost::gemm_time_ms(slow, s) == Approx(0.01 + 0.0036864));
    // 4-byte elements (the model's dtype_bytes) move twice the bytes: 7.3728e-6 s.
    const cost::GemmShape wide{128, 128, 8, 1, 4};
    CHECK(cost::gemm_time_ms(slow, wide) == Approx(0.01 + 0.0073728));
    // A shape without an element size is a caller's bug, not a zero-byte GEMM.
    CHECK_THROWS_AS(cost::gemm_memory_ms(slow, cost::GemmShape{128, 128, 8, 1}), Error);
  }
  SECTION("split-K: a small output over a long k uses the idle units") {
    // 128 x 256 = 2 tiles on 4 units: k = 4096 split in 2; 4 slices, one wave of
    // 2 x 128 x 128 x 2048 = 67,108,864 FLOPs = 1.34217728e-4 s, what the
    // 268,435,456 FLOPs take at the full 2e12 FLOP/s.
    CHECK(cost::gemm_compute_ms(g, {128, 256, 4096, 1, 2}) == Approx(0.134217728));
    CHECK(cost::split_k(3, 4) == 1);  // floor(4 / 3) = 1: no split
    CHECK(cost::split_k(4, 4) == 1);
  }
  SECTION("backward shapes: input gradient (m, k, n), weight gradient (k, n, m)") {
    const cost::GemmShape f{2048, 512, 256, 3, 2};
    const cost::GemmShape di = cost::input_gradient_shape(f);
    const cost::GemmShape dw = cost::weight_gradient_shape(f);
    CHECK((di.m == 2048 && di.n == 256 && di.k == 512 && di.batch == 3));
    CHECK((dw.m == 256 && dw.n == 512 && dw.k == 2048 && dw.batch == 3));
    CHECK(cost::gemm_flops(di) + cost::gemm_flops(dw) == 2 * cost::gemm_flops(f));
    // The weight gradient is added into Megatron-Core's main_grad, read and
    // written: 4 + 4 B in fp32 (the default), 2 + 2 B in bf16; the input gradient is not.
    CHECK(dw.accumulate_bytes == 8.0);
    CHECK(cost::weight_gradient_shape(f, 2.0).accumulate_bytes == 4.0);
    CHECK(di.accumulate_bytes == 0.0);
  }
  SECTION("a weight gradient accumulated in fp32 reads and writes C at 4 bytes each") {
    // 128 x 128 output, k = 8 on 1e10 B/s (memory-bound, as above): A and B
    // (128 x 8 + 8 x 128) x 2 B = 4,096 B, C 128 x 128 x (4 + 4) = 131,072 B:
    // 135,168 B = 1.35168e-5 s, against 36,864 B written once at 2 bytes.
    model::GemmShapeModelSpec slow = g;
    slow.memory_bytes_per_s = 1e10;
    cost::GemmShape s{128, 128, 8, 1, 2};
    s.accumulate_bytes = cost::kFp32AccumulateBytes;
    CHECK(cost::gemm_memory_ms(slow, s) == Approx(0.0135168));
    CHECK(cost::gemm_time_ms(slow, s) == Approx(0.01 + 0.0135168));
    // Into bf16 main gradients (grad_reduce_in_bf16): C at 2 + 2 B, 65,536 B,
    // 69,632 B in all = 6.9632e-6 s.
    s.accumulate_bytes = 4.0;
    CHECK(cost::gemm_memory_ms(slow, s) == Approx(0.0069632));
  }
  SECTION("a grouped GEMM pays product_alpha for each of its products") {
    // 3 products of one tile: one wave (0.067108864 ms) + alpha 0.01 + 3 x 0.005;
    // a single GEMM (batch 1) pays alpha alone.
    model::GemmShapeModelSpec grouped = g;
    grouped.product_alpha_ms = 0.005;
    CHECK(cost::gemm_time_ms(grouped, {128, 128, 1024, 3, 2}) == Approx(0.01 + 0.015 + 0.067108864));
    CHECK(cost::gemm_time_ms(grouped, {256, 256, 1024, 1, 2}) == Approx(0.077108864));
  }
}

TEST_CASE("CostModel::gemm prices by shape only when the profile has the block", "[cost]") {
  model::CostProfileSpec p{"p", "c", {testing::cost_line(model::OpClass::Gemm, model::LinkClass::Local, 1, 0.01, 1e-12)},
                           1.0};
  const cost::GemmShape s{256, 256, 1024, 1, 2};
  // Without: the line on 2 x 256 x 256 x 1024 = 134,217,728 FLOPs x 1e-12 ms.
  CHECK(cost::CostModel(p).gemm(s).value == Approx(0.01 + 1.34217728e-4));
  p.gemm_shape = toy();
  CHECK(cost::CostModel(p).gemm(s).value == Approx(0.077108864));
  // compute() keeps the line either way.
  CHECK(cost::CostModel(p).compute(model::OpClass::Gemm, 1e9).value == Approx(0.01 + 1e-3));
}

TEST_CASE("datasheet_gemm_shape derives the H100 block from its cluster file", "[cost]") {
  const model::ClusterSpec cluster = io::load_cluster("dgx-h100");
  const cost::DatasheetAssumptions a;
  const auto g = cost::datasheet_gemm_shape(cluster.gpu, a);
  REQUIRE(g);
  // H100 SXM5: 132 SMs, 989.5 TFLOP/s dense BF16, 3.35 TB/s; tile 128 x 256;
  // the line's efficiency, the cluster file's measured 0.77, and startup 0.01 ms.
  CHECK(g->units == 132);
  CHECK((g->tile_m == 128 && g->tile_n == 256));
  CHECK(g->peak_flops_per_s == Approx(989.5e12));
  CHECK(g->memory_bytes_per_s == Approx(3.35e12));
  CHECK(g->efficiency == 0.77);
  // 4096^3: 32 x 16 = 512 tiles, ceil(512 / 132) = 4 waves (3.88 full), each
  // 2 x 128 x 256 x 4096 = 268,435,456 FLOPs at 989.5e12 / 132 x 0.77 =
  // 5.7721e12 FLOP/s = 0.0465058 ms: 0.01 + 4 x 0.0465058 = 0.1960233 ms,
  // 3.0% over the line's 0.01 + 2 x 4096^3 / (989.5e12 x 0.77) = 0.1903862 ms.
  CHECK(cost::gemm_time_ms(*g, {4096, 4096, 4096, 1, 2}) == Approx(0.1960233).epsilon(1e-6));
  // Without an SM count or bandwidth there is no block.
  model::GpuSpec bare = cluster.gpu;
  bare.sm_count.reset();
  CHECK_FALSE(cost::datasheet_gemm_shape(bare, a));
  // And the profile carries it.
  CHECK(cost::datasheet_profile(cluster, "x", a).gemm_shape);
  // Half precision: Transformer Engine's grouped GEMM, 0.005 ms per expert (the
  // fit to SimuMax's B200 sweep); fp32 (the papers' own kernels): none.
  CHECK(g->product_alpha_ms == 0.005);
  cost::DatasheetAssumptions fp32 = a;
  fp32.dtype = cost::ComputeDtype::Fp32;
  CHECK(cost::datasheet_gemm_shape(cluster.gpu, cost::for_gpu(cluster.gpu, fp32))->product_alpha_ms == 0);
}

TEST_CASE("validate: a GEMM shape block out of range names its field", "[cost]") {
  model::CostProfileSpec p{"p", "c", {}, 1.0};
  auto field_of = [&](auto change) {
    p.gemm_shape = toy();
    change(*p.gemm_shape);
    try {
      model::validate(p);
    } catch (const Error& e) {
      return e.field();
    }
    return std::string("none");
  };
  CHECK(field_of([](auto&) {}) == "none");
  CHECK(field_of([](auto& g) { g.units = 0; }) == "gemm_shape.units");
  CHECK(field_of([](auto& g) { g.tile_n = -1; }) == "gemm_shape.tile_n");
  CHECK(field_of([](auto& g) { g.efficiency = 1.5; }) == "gemm_shape.efficiency");
  CHECK(field_of([](auto& g) { g.efficiency = 0; }) == "gemm_shape.efficiency");
  CHECK(field_of([](auto& g) { g.peak_flops_per_s = 1e30; }) == "gemm_shape.peak_tflops");
  CHECK(field_of([](auto& g) { g.memory_bytes_per_s = 0; }) == "gemm_shape.memory_gbytes_per_s");
  CHECK(field_of([](auto& g) { g.alpha_ms = -1; }) == "gemm_shape.alpha_ms");
  CHECK(field_of([](auto& g) { g.product_alpha_ms = -1; }) == "gemm_shape.product_alpha_ms");
  CHECK(field_of([](auto& g) { g.product_alpha_ms = std::numeric_limits<double>::infinity(); }) ==
        "gemm_shape.product_alpha_ms");
}

TEST_CASE("fit_gemm_shape recovers efficiency and alpha from measured GEMMs", "[cost]") {
  // Points timed by hand on toy() (4 units, 4e12 FLOP/s peak, 128 x 128, 1e12
  // B/s) at efficiency 0.5 and alpha 0.01 ms (one tile-wave of k = 1024 at
  // 5e11 FLOP/s per unit is 0.067108864 ms):
  // - 256 x 256 x 1024: 4 tiles, 1 wave: 0.01 + 0.067108864
  // - 257 x 256 x 1024: 6 tiles, 2 waves: 0.01 + 0.134217728
  // - 512 x 512 x 1024: 16 tiles, 4 waves: 0.01 + 0.268435456
  // - 4096 x 4096 x 1: memory-bound, (4096 + 4096 + 4096^2) x 2 B at 1e12 B/s
  //   = 0.033570816 ms over a compute side of 256 waves x 6.5536e-5 ms = 0.016777 ms.
  model::GemmShapeModelSpec base = toy();
  base.efficiency = 0.9;  // overwritten by the fit
  base.alpha_ms = 0.5;
  const std::vector<cost::GemmPoint> points = {{{256, 256, 1024, 1, 2}, 0.01 + 0.067108864},
                                               {{257, 256, 1024, 1, 2}, 0.01 + 0.134217728},
                                               {{512, 512, 1024, 1, 2}, 0.01 + 0.268435456},
                                               {{4096, 4096, 1, 1, 2}, 0.01 + 0.033570816}};
  const model::GemmShapeModelSpec g = cost::fit_gemm_shape(base, points);
  CHECK(g.efficiency == Approx(0.5));
  CHECK(g.alpha_ms == Approx(0.01));
  CHECK(g.points == 3);  // the memory-bound point is not on the compute line
  REQUIRE(g.r2);
  CHECK(*g.r2 == Approx(1.0));
  // Without startup, the best tile rate is what a full tile reaches: 0.5 x 4e12.
  std::vector<cost::GemmPoint> bare = points;
  for (cost::GemmPoint& p : bare) p.time_ms -= 0.01;
  CHECK(cost::highest_tile_rate(base, bare) == Approx(2e12));
  // Only memory-bound points: nothing to fit the compute side to.
  CHECK_THROWS_AS(cost::fit_gemm_shape(base, {points.back()}), Error);
}
