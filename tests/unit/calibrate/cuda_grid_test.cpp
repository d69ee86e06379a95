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
  REQUIRE(full.size() == 10);  // 5 lengths x 2 head sizes
  CHECK((full[9].seq_len == 8192 && full[9].head_dim == 128));
}
