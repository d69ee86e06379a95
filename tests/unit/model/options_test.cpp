// The options table (model/options.hpp): what it refuses, that docs/formats.md
// prints it as the code holds it, and the family limits validation enforces.

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/options.hpp>

using moeplan::io::load_scenario;
using moeplan::io::Override;

TEST_CASE("docs/formats.md prints the options table the validation uses", "[model][options]") {
  std::ifstream in(std::string(MOEPLAN_SOURCE_DIR) + "/docs/formats.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string begin = "<!-- option-table:begin -->\n", end = "<!-- option-table:end -->";
  const std::string doc = text.str();
  const std::size_t a = doc.find(begin), b = doc.find(end);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  // On failure, paste the expected text between the markers.
  CHECK(doc.substr(a + begin.size(), b - a - begin.size()) == moeplan::model::option_rules_markdown());
}

TEST_CASE("an option of another family is refused, naming it and why", "[model][options]") {
  // FlowMoE's Sp on a FoldMoE scenario: accepted and ignored before issue 13.
  try {
    load_scenario("foldmoe-gpt-moe-m-16k", {Override{"schedule.ar_chunk_bytes", "1048576"}});
    FAIL("accepted");
  } catch (const moeplan::Error& e) {
    CHECK(e.field() == "schedule.ar_chunk_bytes");
    CHECK_THAT(e.reason(), Catch::Contains("cannot act on this foldmoe scenario") &&
                               Catch::Contains("FlowMoE's all-reduce chunk size"));
  }
  CHECK(load_scenario("flowmoe-gpt2-tiny-moe-c1", {Override{"schedule.ar_chunk_bytes", "1048576"}})
            .schedule.ar_chunk_bytes == 1048576);
  // Stragglers act only in a multi-rank graph (issue 13, item 1), which FoldMoE,
  // FSMoE and FlowMoE build (issue 15, item 3); folding has none.
  CHECK_THROWS_WITH(load_scenario("foldmoe-gpt-moe-m-16k", {Override{"schedule.slow_ranks_compute_factor", "2"}}),
                    Catch::Contains("one rank per GPU"));
  CHECK_THROWS_WITH(load_scenario("flowmoe-gpt2-tiny-moe-c1", {Override{"schedule.slow_ranks_compute_factor", "2"}}),
                    Catch::Contains("one rank per GPU"));
  for (const char* scenario : {"flowmoe-gpt2-tiny-moe-c1", "foldmoe-gpt-moe-m-16k", "fsmoe-testbed-b-gpt2-xl"}) {
    INFO(scenario);
    const auto s = load_scenario(scenario, {Override{"schedule.mode", "multi_rank"},
                                            Override{"schedule.slow_ranks_compute_factor", "2"}});
    CHECK(s.schedule.multi_rank);
    CHECK(s.schedule.slow_ranks_compute_factor == 2.0);
  }
  try {
    load_scenario("folding-mixtral-8x22b-128", {Override{"schedule.mode", "multi_rank"}});
    FAIL("accepted");
  } catch (const moeplan::Error& e) {
    CHECK(e.field() == "schedule.mode");
    CHECK_THAT(e.reason(), Catch::Contains("cannot act on this folding scenario"));
  }
  CHECK_THROWS_WITH(load_scenario("folding-mixtral-8x22b-128", {Override{"schedule.slow_ranks_compute_factor", "2"}}),
                    Catch::Contains("one rank per GPU"));
  // Folding runs no named schedule and no per-layer degree (issue 13, item 2).
  CHECK_THROWS_WITH(load_scenario("folding-mixtral-8x22b-128", {Override{"schedule.degree", "2"}}),
                    Catch::Contains("cannot act on this folding scenario"));
}

TEST_CASE("a model file's choice a family cannot build is refused, not simulated as another", "[model][options]") {
  // gpt2-tiny-moe with every other block dense: FlowMoE's builder makes every block MoE.
  CHECK_THROWS_WITH(load_scenario("flowmoe-gpt2-tiny-moe-c1",
                                  {Override{"schedule.family", "flowmoe"}, Override{"model.moe.moe_layer_interval", "2"},
                                   Override{"model.ffn_hidden", "3072"}}),
                    Catch::Contains("cannot act on this flowmoe scenario"));
  // pp = 2 on FoldMoE: its schedule runs every layer on one stage.
  CHECK_THROWS_WITH(load_scenario("foldmoe-gpt-moe-m-16k", {Override{"parallelism.pp", "2"},
                                                            Override{"parallelism.dp", "1"},
                                                            Override{"parallelism.ep", "8"}}),
                    Catch::Contains("every layer on one pipeline stage"));
}

TEST_CASE("an override replaces the model's alternative to it", "[model][options]") {
  // mixtral-8x22b is dropless; the folding scenario sets capacity 1.0 (set: lines),
  // and --set dropless=true must clear that capacity rather than clash with it.
  const auto dropless = load_scenario("folding-mixtral-8x22b-128", {Override{"model.moe.dropless", "true"}});
  CHECK_FALSE(dropless.model.moe.capacity_factor.has_value());
  // moe_layers replaces the interval: block 1 only is MoE (2 blocks of 56 are not).
  const auto one = load_scenario("folding-mixtral-8x22b-128", {Override{"model.moe.moe_layers", "1"},
                                                               Override{"model.ffn_hidden", "16384"}});
  CHECK(one.model.num_moe_layers() == 1);
  CHECK(one.model.moe_layer[1]);
}

TEST_CASE("model::option_schema_path writes every index as [*]", "[model][options]") {
  using moeplan::model::option_schema_path;
  CHECK(option_schema_path("profile.costs[12].alpha_ms") == "profile.costs[*].alpha_ms");
  CHECK(option_schema_path("profile.costs[*].alpha_ms") == "profile.costs[*].alpha_ms");
  CHECK(option_schema_path("a[0].b[3]") == "a[*].b[*]");
  CHECK(option_schema_path("a[x].b[]") == "a[x].b[]");  // not indices: kept
}
