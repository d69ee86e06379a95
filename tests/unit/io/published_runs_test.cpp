// The published-runs table (tests/data/published-runs.tsv, docs/validation.md):
// its rows read as written, and a malformed table refused at its line and column.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/published_runs.hpp>

namespace {

namespace fs = std::filesystem;

const std::string kHeader =
    "id\tsource\tmodel\tmodel_ref\tset\tcluster_ref\tprofile_ref\tgpus\tgpus_per_node\ttp\tpp\tvpp\tcp\tep\tetp\tdp\t"
    "seq\tgbs\tmbs\tprecision\trecompute\tfamily\tmetric\tvalue\tpeak_alloc_gib\tnotes\n";

// A row of a 64-GPU GPT-OSS-like run: tp 1 pp 1 dp 64, 1280 x 4096 tokens.
std::string row(const std::string& id, const std::string& dp = "64", const std::string& precision = "bf16",
                const std::string& metric = "tokens_per_s_per_gpu", const std::string& value = "16640") {
  return id + "\tsrc\tm\tmodel\tmodel.num_layers=4\tcluster\tprofile\t64\t4\t1\t1\t1\t1\t64\t1\t" + dp +
         "\t4096\t1280\t4\t" + precision + "\tnone\tfolding\t" + metric + "\t" + value + "\t\tnote\n";
}

std::string table_file(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("moeplan-published-" + name + ".tsv");
  std::ofstream(p) << text;
  return p.string();
}

std::string refusal(const std::string& name, const std::string& text) {
  try {
    moeplan::io::read_published_runs(table_file(name, text));
  } catch (const moeplan::Error& e) {
    CHECK(e.kind() == moeplan::ErrorKind::Input);
    return fmt::format("{}:{}: {}", e.location().line, e.field(), e.reason());
  }
  return "";
}

}  // namespace

TEST_CASE("io::read_published_runs reads the bundled table as written", "[io][published]") {
  const auto runs = moeplan::io::read_published_runs(moeplan::io::bundled_published_runs());
  REQUIRE(runs.size() >= 37);
  const moeplan::io::PublishedRun& r = runs.front();
  // S1-01: SimuMax's Llama3-70B (12 layers), tp 1 pp 2 dp 4, 16 x 4096 tokens, 0.843 s, 66.55 GiB peak,
  // its loss on Transformer Engine's fused kernels (the case name's _cef).
  CHECK(r.id == "S1-01");
  CHECK(r.tp == 1);
  CHECK(r.pp == 2);
  CHECK(r.dp == 4);
  CHECK(r.global_batch == 16);
  CHECK(r.seq == 4096);
  CHECK(r.value == 0.843);
  CHECK(r.measured_iteration_s() == 0.843);
  REQUIRE(r.peak_alloc_gib);
  CHECK(*r.peak_alloc_gib == 66.55);
  REQUIRE(r.overrides.size() == 2);
  CHECK(r.overrides[0].field == "model.num_layers");
  CHECK(r.overrides[0].value == "12");
  CHECK(r.overrides[1].field == "schedule.cross_entropy_fusion");
  CHECK(r.overrides[1].value == "te");
}

TEST_CASE("io::PublishedRun converts a throughput to an iteration", "[io][published]") {
  const auto runs = moeplan::io::read_published_runs(table_file("ok", kHeader + row("X-1")));
  REQUIRE(runs.size() == 1);
  // 1280 sequences x 4096 tokens / (16640 tokens/s/GPU x 64 GPUs) = 5,242,880 / 1,064,960 s.
  CHECK(runs[0].measured_iteration_s() == Approx(5242880.0 / 1064960.0));
  CHECK(runs[0].measured_iteration_s() == Approx(4.923077).epsilon(1e-6));
  CHECK_FALSE(runs[0].peak_alloc_gib);
}

TEST_CASE("io::read_published_runs refuses a malformed table at its line and column", "[io][published]") {
  using Catch::StartsWith;
  CHECK_THAT(refusal("dp", kHeader + row("X-1", "32")), StartsWith("2:dp: tp*cp*pp*dp = 1*1*1*32 is not the 64 GPUs"));
  // The source's spelling is not moeplan's: the row says which recipe it is.
  CHECK_THAT(refusal("fp8", kHeader + row("X-1", "64", "MXFP8")),
             StartsWith("2:precision: expected bf16, fp8_delayed, fp8_tensorwise, fp8_blockwise or mxfp8, got 'MXFP8'"));
  CHECK_THAT(refusal("metric", kHeader + row("X-1", "64", "bf16", "tflops_per_gpu")),
             StartsWith("2:metric: expected iteration_s or tokens_per_s_per_gpu"));
  CHECK_THAT(refusal("value", kHeader + row("X-1", "64", "bf16", "iteration_s", "nan")),
             StartsWith("2:value: expected a finite number"));
  CHECK_THAT(refusal("twice", kHeader + row("X-1") + row("X-1")), StartsWith("3:id: id X-1 is already on line 2"));
  CHECK_THAT(refusal("cells", kHeader + "X-1\tsrc\n"), StartsWith("2:row: 2 cells, the header has 26"));
  CHECK_THAT(refusal("header", "id\tsource\n"), StartsWith("1:header: column model is missing"));
  CHECK_THAT(refusal("empty", "# nothing\n"), StartsWith("0:header: no header"));
}

TEST_CASE("io::PublishedRun::scenario_text writes an FP8 row's recipe into the workload", "[io][published]") {
  const auto runs = moeplan::io::read_published_runs(table_file("fp8-row", kHeader + row("X-1", "64", "mxfp8")));
  REQUIRE(runs.size() == 1);
  CHECK_THAT(runs[0].scenario_text(), Catch::Contains("  precision: \"mxfp8\"\n}"));
  const auto bf16 = moeplan::io::read_published_runs(table_file("bf16-row", kHeader + row("X-2")));
  CHECK_THAT(bf16[0].scenario_text(), !Catch::Contains("precision"));
}
