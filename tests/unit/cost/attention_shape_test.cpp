#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/attention_shape.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/workload_sizing.hpp>

#include "../test_support.hpp"

using namespace moeplan;

namespace {
// GPT2-Tiny-MoE's attention (FlowMoE Table 2): d_model 256, 4 heads of 64, fp32.
model::ModelSpec tiny() {
  model::ModelSpec m;
  m.name = "tiny";
  m.d_model = 256;
  m.num_heads = 4;
  m.num_kv_heads = 4;
  m.head_dim = 64;
  m.dtype_bytes = 4;
  return m;
}

// Scores of the blocked kernel, counted block by block (the loop the kernel runs).
double scores_by_loop(std::int64_t q, std::int64_t c, std::int64_t block) {
  double out = 0;
  for (std::int64_t b0 = 0; b0 < q; b0 += block) {
    const std::int64_t rows = std::min(block, q - b0);
    out += static_cast<double>(rows * (c - q + b0 + rows));
  }
  return out;
}

model::CostProfileSpec profile_with_lines() {
  model::CostProfileSpec p{"p", "c", {}, 1.0};
  p.costs.push_back(testing::cost_line(model::OpClass::Gemm, model::LinkClass::Local, 1, 0.05, 2e-8));
  p.costs.push_back(testing::cost_line(model::OpClass::Attention, model::LinkClass::Local, 1, 1.0, 3e-8));
  return p;
}
}  // namespace

TEST_CASE("attention_tile_scores: 64-row blocks against every key up to the block's last row", "[cost]") {
  // q = c = 128: 64 x 64 + 64 x 128 = 12,288 (the causal pairs are 8,256).
  CHECK(cost::attention_tile_scores(128, 128, 64) == 12288.0);
  // The last 100 of 300 tokens: 64 x (200 + 64) + 36 x (200 + 64 + 36) = 16,896 + 10,800.
  CHECK(cost::attention_tile_scores(100, 300, 64) == 27696.0);
  CHECK(cost::attention_tile_scores(1, 1, 64) == 1.0);
  // Block of one row: exactly the causal pairs q (c - q) + q (q + 1) / 2.
  CHECK(cost::attention_tile_scores(256, 512, 1) == 256.0 * 256.0 + 256.0 * 257.0 / 2.0);
  for (std::int64_t q : {1, 63, 64, 65, 200, 1024})
    for (std::int64_t extra : {0, 7, 512}) CHECK(cost::attention_tile_scores(q, q + extra, 64) == scores_by_loop(q, q + extra, 64));
}

TEST_CASE("attention_task_shape: sequences, heads and projection GEMMs of an attention task", "[cost]") {
  const model::ModelSpec m = tiny();
  // Four whole 256-token sequences: 4 x attention_flops(256, 256).
  const double forward = 4.0 * cost::attention_flops(m, 256, 256);
  const cost::AttentionTaskShape f = cost::attention_task_shape(m, 256, 256, forward);
  CHECK(f.heads == 16);  // 4 sequences x 4 heads
  REQUIRE(f.projections.size() == 4);  // Q, K, V, O
  for (const cost::GemmShape& g : f.projections) {
    CHECK(g.m == 1024.0);  // 4 x 256 tokens
    CHECK(g.k == 256.0);   // d_model
    CHECK(g.n == 256.0);   // 4 heads x 64
    CHECK(g.batch == 1.0);
    CHECK(g.element_bytes == 4.0);
  }
  // Backward: 2x the FLOPs, twice the heads and rows.
  const cost::AttentionTaskShape b = cost::attention_task_shape(m, 256, 256, 2.0 * forward);
  CHECK(b.heads == 32);
  CHECK(b.projections[0].m == 2048.0);
  // GQA: K and V have 1 KV head of 64 columns.
  model::ModelSpec gqa = m;
  gqa.num_kv_heads = 1;
  const cost::AttentionTaskShape g = cost::attention_task_shape(gqa, 256, 256, cost::attention_flops(gqa, 256, 256));
  CHECK(g.projections[0].n == 256.0);
  CHECK(g.projections[1].n == 64.0);
  CHECK(g.projections[2].n == 64.0);
  CHECK(g.projections[3].n == 256.0);
  model::ModelSpec headless = m;
  headless.head_dim = 0;
  CHECK_THROWS_AS(cost::attention_task_shape(headless, 256, 256, forward), Error);
  // Multi-head latent attention has other projections: refused, naming the profile block.
  model::ModelSpec mla = m;
  mla.mla = model::MlaSpec{};
  try {
    (void)cost::attention_task_shape(mla, 256, 256, forward);
    FAIL("MLA was priced");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Input);
    CHECK(e.field() == "profile.attention_shape");
  }
}

TEST_CASE("CostModel::attention: the shape model when the profile has one, else the attention line", "[cost]") {
  const model::ModelSpec m = tiny();
  const double flops = 4.0 * cost::attention_flops(m, 256, 256);
  model::CostProfileSpec p = profile_with_lines();
  // Without the block: the line on the task's FLOPs, as before.
  CHECK(cost::CostModel(p).attention(m, 256, 256, flops).value == Approx(1.0 + 3e-8 * flops).epsilon(1e-12));
  model::AttentionShapeModelSpec a;
  a.block_rows = 64;
  a.alpha_ms = 0.3;
  a.matmul_ms_per_gflop = 20;
  a.score_ms_per_melement = 2.5;
  p.attention_shape = a;
  // By hand: S = 16 heads x 64 (64 + 128 + 192 + 256) = 655,360 scores;
  // core = 0.3 + 20 x 4 x 64 x S / 1e9 + 2.5 x S / 1e6 = 0.3 + 3.3554432 + 1.6384.
  // Projections on the gemm line (no gemm_shape): 4 x (0.05 + 2e-8 x 2 x 1024 x 256 x 256).
  const double core = 0.3 + 3.3554432 + 1.6384;
  const double projections = 4.0 * (0.05 + 2e-8 * 2.0 * 1024 * 256 * 256);
  const cost::CostModel costs(p);
  CHECK(costs.attention(m, 256, 256, flops).value == Approx(core + projections).epsilon(1e-12));
  // The core alone (folding prices projections itself): the same core.
  CHECK(costs.attention_core(m, 256, 256, 4.0 * cost::attention_core_flops(m, 256, 256),
                             model::AttentionPass::Forward)
            .value == Approx(core).epsilon(1e-12));
}

TEST_CASE("fit_attention_shape recovers the terms of synthetic points, and drops a negative one", "[cost]") {
  // Times made by hand from the loop count of scores: t = 0.2 + 15 x 4 k S / 1e9 + 3 x S / 1e6.
  std::vector<cost::AttentionPoint> points;
  for (std::int64_t l : {128, 256, 512, 1024})
    for (std::int64_t k : {32, 64}) {
      const double s = 4.0 * scores_by_loop(l, l, 64);
      points.push_back({l, l, 4, k, 0.2 + 15.0 * 4.0 * static_cast<double>(k) * s / 1e9 + 3.0 * s / 1e6});
    }
  const model::AttentionShapeModelSpec a = cost::fit_attention_shape(64, points);
  CHECK(a.alpha_ms == Approx(0.2).epsilon(1e-9));
  CHECK(a.matmul_ms_per_gflop == Approx(15.0).epsilon(1e-9));
  CHECK(a.score_ms_per_melement == Approx(3.0).epsilon(1e-9));
  CHECK(*a.r2 == Approx(1.0));
  CHECK(a.points == 8);
  // Times that fall with the size of the matmul term: its coefficient would
  // be negative; it is dropped (0) and the rest refitted: t = 0.5 + 4 S / 1e6 - (tiny matmul).
  std::vector<cost::AttentionPoint> falling;
  for (std::int64_t l : {128, 256, 512, 1024})
    for (std::int64_t k : {32, 64}) {
      const double s = 4.0 * scores_by_loop(l, l, 64);
      falling.push_back({l, l, 4, k, 0.5 + 4.0 * s / 1e6 - 1.0 * 4.0 * static_cast<double>(k) * s / 1e9});
    }
  const model::AttentionShapeModelSpec d = cost::fit_attention_shape(64, falling);
  CHECK(d.matmul_ms_per_gflop == 0.0);
  CHECK(d.score_ms_per_melement > 0.0);
  CHECK(d.alpha_ms >= 0.0);
  CHECK_THROWS_AS(cost::fit_attention_shape(64, std::vector<cost::AttentionPoint>(points.begin(), points.begin() + 3)),
                  Error);
}
