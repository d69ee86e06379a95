#include <catch2/catch.hpp>

#include <moeplan/calibrate/host_calibration.hpp>
#include <moeplan/core/error.hpp>
#include <moeplan/core/median.hpp>

using namespace moeplan;

TEST_CASE("median: middle value, or mean of the two middle ones", "[calibrate]") {
  CHECK(moeplan::median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(moeplan::median({4.0, 1.0, 3.0, 2.0}) == 2.5);  // (2 + 3) / 2
  CHECK(moeplan::median({7.0}) == 7.0);
  CHECK(moeplan::median({1.0, 100.0, 2.0, 3.0, 1000.0}) == 3.0);  // outliers do not move it
  CHECK_THROWS_AS(moeplan::median({}), Error);
}

TEST_CASE("calibrate::gemm_flops is 2 m n k", "[calibrate]") {
  CHECK(calibrate::gemm_flops({16, 256, 512}) == 4194304.0);        // 2 x 16 x 256 x 512
  CHECK(calibrate::gemm_flops({1024, 512, 2048}) == 2147483648.0);  // 2 x 1024 x 512 x 2048 = 2^31
}

TEST_CASE("calibrate::gemm_grid: the documented shapes, tokens outermost", "[calibrate]") {
  const auto quick = calibrate::gemm_grid(true);
  REQUIRE(quick.size() == 6);  // {16, 64, 256} x {256} x {512, 1024}
  CHECK(quick[0].tokens == 16);
  CHECK(quick[0].d_model == 256);
  CHECK(quick[0].ffn == 512);
  CHECK(quick[1].ffn == 1024);
  CHECK(quick[5].tokens == 256);
  CHECK(quick[5].ffn == 1024);
  const auto full = calibrate::gemm_grid(false);
  REQUIRE(full.size() == 16);  // {16, 64, 256, 1024} x {256, 512} x {512, 2048}
  CHECK(full[2].d_model == 512);
  CHECK(full[15].tokens == 1024);
  CHECK(full[15].d_model == 512);
  CHECK(full[15].ffn == 2048);
}

TEST_CASE("calibrate::attention_flops: causal pairs x (4 h k + 3 h)", "[calibrate]") {
  // L = 128: 128 x 129 / 2 = 8256 causal pairs; h = 4, k = 64: 4 x 4 x 64 + 3 x 4 = 1036 FLOPs per pair.
  CHECK(calibrate::attention_flops({128, 4, 64}) == 8256.0 * 1036.0);
  // L = 2048, k = 32: 2048 x 2049 / 2 = 2098176 pairs, 4 x 4 x 32 + 12 = 524 FLOPs per pair.
  CHECK(calibrate::attention_flops({2048, 4, 32}) == 2098176.0 * 524.0);
  // A slice: the last 128 queries of a 512-token context: 128 x 384 + 128 x 129 / 2 = 57408 pairs.
  CHECK(calibrate::attention_flops({512, 4, 64, 128}) == 57408.0 * 1036.0);
  CHECK(calibrate::attention_grid(true).size() == 6);    // {128, 256, 512} x {32, 64}
  CHECK(calibrate::attention_grid(false).size() == 12);  // {128, .., 2048} x {32, 64} and 2 slices
  // Both head sizes at each length: the shape model's two terms need them apart.
  CHECK(calibrate::attention_grid(true)[0].head_dim == 32);
  CHECK(calibrate::attention_grid(true)[1].head_dim == 64);
  CHECK(calibrate::attention_grid(false)[10].query_count() == 128);
  CHECK(calibrate::attention_grid(false)[10].seq_len == 512);
}

TEST_CASE("calibrate::message_sizes: x4 steps (quick), x2 steps (full), up to 2 MiB", "[calibrate]") {
  CHECK(calibrate::message_sizes(true) == std::vector<double>{16384, 65536, 262144, 1048576});
  const auto full = calibrate::message_sizes(false);
  REQUIRE(full.size() == 10);  // 4, 8, 16, 32, 64, 128, 256, 512 KiB, 1, 2 MiB
  CHECK(full.front() == 4096);
  CHECK(full[1] == 8192);
  CHECK(full.back() == 2097152);
}

TEST_CASE("calibrate::points_path replaces the extension", "[calibrate]") {
  CHECK(calibrate::points_path("out/host.textproto") == "out/host.points.csv");
  CHECK(calibrate::points_path("host") == "host.points.csv");
  CHECK(calibrate::points_path("a.b/host.txt") == "a.b/host.points.csv");
}

TEST_CASE("calibrate::points_csv writes what moeplan fit reads", "[calibrate]") {
  calibrate::HostCalibration c;
  model::TimingSample g;
  g.op = model::OpClass::Gemm;
  g.size = 4194304;
  g.time_ms = 0.125;
  c.samples.push_back(g);
  model::TimingSample a;
  a.op = model::OpClass::A2A;
  a.link = model::LinkClass::Intra;
  a.group = 2;
  a.size = 16384;
  a.time_ms = 0.1;
  c.samples.push_back(a);
  c.collectives_measured = true;
  const std::string csv = calibrate::points_csv(c);
  CHECK(csv.find("op,link,group,size,time_ms\ngemm,local,1,4194304,0.125\na2a,intra,2,16384,0.1\n") !=
        std::string::npos);
}
