// The GPU-free part of calibrate --backend cuda (cuda_calibration.hpp).

#include <catch2/catch.hpp>

#include <moeplan/calibrate/cuda_calibration.hpp>
#include <moeplan/core/error.hpp>

using namespace moeplan;
using model::OpClass;

TEST_CASE("calibrate::bus_bandwidth_factor: nccl-tests' factors", "[calibrate]") {
  CHECK(calibrate::bus_bandwidth_factor(OpClass::AllReduce, 8) == 1.75);     // 2 x 7 / 8
  CHECK(calibrate::bus_bandwidth_factor(OpClass::AllGather, 4) == 0.75);     // 3 / 4
  CHECK(calibrate::bus_bandwidth_factor(OpClass::ReduceScatter, 2) == 0.5);  // 1 / 2
  CHECK(calibrate::bus_bandwidth_factor(OpClass::A2A, 8) == 0.875);          // 7 / 8
  CHECK(calibrate::bus_bandwidth_factor(OpClass::P2P, 2) == 1.0);
  for (OpClass op : {OpClass::AllReduce, OpClass::AllGather, OpClass::ReduceScatter, OpClass::A2A, OpClass::P2P})
    CHECK(calibrate::bus_bandwidth_factor(op, 1) == 0.0);  // one rank moves nothing
  CHECK_THROWS_AS(calibrate::bus_bandwidth_factor(OpClass::Gemm, 2), Error);
}

TEST_CASE("calibrate::cuda_gemm_grid: model expert shapes, tokens outermost", "[calibrate]") {
  const auto quick = calibrate::cuda_gemm_grid(true);
  REQUIRE(quick.size() == 9);  // 3 tokens x 3 (d_model, ffn)
  CHECK((quick[0].tokens == 256 && quick[0].d_model == 256 && quick[0].ffn == 512));
  CHECK((quick[8].tokens == 16384 && quick[8].d_model == 4096 && quick[8].ffn == 14336));
  const auto full = calibrate::cuda_gemm_grid(false);
  REQUIRE(full.size() == 42);                                                     // 6 tokens x 7 pairs
  CHECK((full[0].tokens == 16 && full[0].d_model == 256 && full[0].ffn == 512));  // gpt2-tiny-moe's expert
  CHECK((full[5].d_model == 3584 && full[5].ffn == 2560));                        // qwen2-57b-a14b's
  CHECK(full[7].tokens == 64);                                                    // second tokens row
  CHECK((full[41].tokens == 16384 && full[41].ffn == 14336));
}

TEST_CASE("calibrate::cuda_attention_grid: 16 heads", "[calibrate]") {
  const auto quick = calibrate::cuda_attention_grid(true);
  REQUIRE(quick.size() == 4);  // {1024, 4096} x head_dim {64, 128}: the shape model's fit needs 4 points
  CHECK((quick[0].head_dim == 64 && quick[1].head_dim == 128));
  CHECK((quick[3].seq_len == 4096 && quick[3].heads == 16 && quick[3].head_dim == 128));
  const auto full = calibrate::cuda_attention_grid(false);
  REQUIRE(full.size() == 12);  // 6 lengths x 2 head sizes
  CHECK((full[9].seq_len == 8192 && full[9].head_dim == 128));
  CHECK((full[11].seq_len == 16384 && full[11].head_dim == 128));  // gpt-moe-s's context
}

TEST_CASE("calibrate::cuda_grouped_grid: local experts of three models", "[calibrate]") {
  const auto quick = calibrate::cuda_grouped_grid(true);
  REQUIRE(quick.size() == 2);
  CHECK((quick[1].experts == 8 && quick[1].per_expert.tokens == 2048 && quick[1].per_expert.d_model == 1024));
  const auto full = calibrate::cuda_grouped_grid(false);
  REQUIRE(full.size() == 9);  // 3 expert sets x 3 token counts
  // Mixtral-8x7B at EP 2: 8 / 2 = 4 local experts of 4096 x 14336 (its HF config).
  CHECK((full[0].experts == 4 && full[0].per_expert.d_model == 4096 && full[0].per_expert.ffn == 14336));
  // DeepSeek-V3 at EP 8: 256 / 8 = 32 experts of 7168 x 2048 (moe_intermediate_size).
  CHECK((full[3].experts == 32 && full[3].per_expert.tokens == 128 && full[3].per_expert.ffn == 2048));
  CHECK((full[8].experts == 64 && full[8].per_expert.tokens == 2048 && full[8].per_expert.ffn == 1408));
}

TEST_CASE("calibrate::cuda_cast_elements: multiples of the cast's 8-element vectors", "[calibrate]") {
  const auto full = calibrate::cuda_cast_elements(false);
  REQUIRE(full.size() == 7);  // 2^16, 2^18, ..., 2^28
  CHECK(full.front() == 65536);
  CHECK(full.back() == 268435456);
  for (std::size_t n : full) CHECK(n % 8 == 0);
  CHECK(calibrate::cuda_cast_elements(true) == std::vector<std::size_t>{1048576, 16777216});
}
