#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>

namespace fs = std::filesystem;
using moeplan::Error;
using moeplan::format_error;

namespace {

std::string error_of(const std::string& path, const std::vector<moeplan::io::Override>& overrides = {}) {
  try {
    moeplan::io::validate_file(path, overrides);
  } catch (const Error& e) {
    CHECK(e.kind() == moeplan::ErrorKind::Input);
    return format_error(e);
  }
  return "";
}

}  // namespace

TEST_CASE("io::validate_file accepts every bundled file", "[io][zoo]") {
  int checked = 0;
  for (const char* folder : {"models", "scenarios", "calibration/profiles"}) {
    const fs::path root = fs::path(MOEPLAN_SOURCE_DIR) / folder;
    if (!fs::exists(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (entry.path().extension() != ".textproto") continue;
      INFO(entry.path().string());
      CHECK(error_of(entry.path().string()).empty());
      ++checked;
    }
  }
  CHECK(checked >= 15 + 6 + 1);  // models, clusters, at least the default scenario
}

TEST_CASE("io::validate_file reports each malformed fixture at its file, line and field", "[io]") {
  // tests/data/bad/EXPECTED: "fixture|substring of the one-line error".
  const fs::path bad = fs::path(MOEPLAN_TEST_DATA_DIR) / "bad";
  std::ifstream expected(bad / "EXPECTED");
  REQUIRE(expected);
  int cases = 0;
  for (std::string line; std::getline(expected, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t bar = line.find('|');
    const std::string file = (bad / line.substr(0, bar)).string();
    const std::string message = error_of(file);
    INFO(file << " -> " << message);
    CHECK(message.find(line.substr(bar + 1)) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
    ++cases;
  }
  CHECK(cases >= 12);
}

TEST_CASE("io::load_scenario resolves references and applies overrides", "[io]") {
  const auto s = moeplan::io::load_scenario("foldmoe-gpt-moe-m-16k");
  CHECK(s.model.name == "gpt-moe-m");
  CHECK(s.cluster.world_size() == 16);
  CHECK(s.parallel.dp == 2);   // given
  CHECK(s.parallel.edp == 1);  // derived: 16 / (etp 1 * ep 16 * pp 1)
  CHECK(s.model.moe_layer == std::vector<bool>{false, true, false, true, false, true});

  const auto t = moeplan::io::load_scenario(
      "foldmoe-gpt-moe-m-16k", {{"workload.seq_len", "32768"}, {"model.moe.top_k", "2"}, {"model_ref", "gpt-moe-l"}});
  CHECK(t.workload.seq_len == 32768);
  CHECK(t.model.name == "gpt-moe-l");
  CHECK(t.model.moe.top_k == 2);
}

TEST_CASE("io::load_scenario names a bad override", "[io]") {
  const std::string scenario = "foldmoe-gpt-moe-m-16k";
  CHECK(error_of(scenario, {{"parallelism.tpx", "3"}}) == "--set: parallelism.tpx: unknown field 'tpx' in Parallelism");
  CHECK(error_of(scenario, {{"workload.seq_len", "many"}}) ==
        "--set: workload.seq_len: expected an integer, got 'many'");
  CHECK(error_of(scenario, {{"model.moe.top_k", "17"}}) == "--set: model.moe.top_k: top_k 17 exceeds num_experts 16");
  CHECK(error_of(scenario, {{"parallelism", "3"}}).find("is a message") != std::string::npos);
  CHECK_THROWS_AS(moeplan::io::parse_override("no-equals-sign"), Error);
}

TEST_CASE("io::resolve_path prefers files, then bundled names", "[io]") {
  CHECK(moeplan::io::resolve_path(moeplan::io::FileKind::Model, "mixtral-8x7b").find("models/mixtral-8x7b.textproto") !=
        std::string::npos);
  CHECK_THROWS_WITH(moeplan::io::resolve_path(moeplan::io::FileKind::Model, "nope"),
                    Catch::Contains("no bundled model named 'nope'"));
  CHECK_THROWS_WITH(moeplan::io::resolve_path(moeplan::io::FileKind::Model, "dir/nope.textproto"),
                    Catch::Contains("no such file"));
}
