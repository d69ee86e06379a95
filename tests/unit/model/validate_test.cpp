#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/validate.hpp>

using moeplan::Error;
using moeplan::model::ScenarioSpec;

namespace {

// The field path an invalid scenario is reported at ("" if it is valid).
std::string failing_field(const ScenarioSpec& s) {
  try {
    moeplan::model::validate(s);
  } catch (const Error& e) {
    return e.field();
  }
  return "";
}

}  // namespace

TEST_CASE("model::validate checks scenario cross-part rules", "[model]") {
  const ScenarioSpec base = moeplan::io::load_scenario("foldmoe-gpt-moe-m-16k");
  REQUIRE(failing_field(base).empty());

  SECTION("heads must divide by tp") {
    ScenarioSpec s = base;
    s.parallel.tp = 16;  // 16 * 1 * 1 * 1 = 16 GPUs, but 8 heads
    s.parallel.dp = 1;
    CHECK(failing_field(s) == "parallelism.tp");
  }
  SECTION("attention mapping must cover the world") {
    ScenarioSpec s = base;
    s.parallel.dp = 4;  // 8 * 4 = 32 != 16
    CHECK(failing_field(s) == "parallelism");
  }
  SECTION("experts must divide by ep") {
    ScenarioSpec s = base;
    s.parallel.ep = 8;
    s.parallel.edp = 2;
    s.model.moe.num_experts = 12;
    CHECK(failing_field(s) == "parallelism.ep");
  }
  SECTION("global batch must split into micro-batches over dp") {
    ScenarioSpec s = base;
    s.workload.global_batch_size = 3;
    CHECK(failing_field(s) == "workload.global_batch_size");
  }
  SECTION("layers must split over pipeline stages") {
    ScenarioSpec s = base;
    s.parallel.pp = 4;  // 6 blocks
    s.parallel.dp = 1;
    s.parallel.tp = 4;
    s.parallel.ep = 4;
    CHECK(failing_field(s) == "parallelism.pp");
  }
  SECTION("virtual pipeline needs pp > 1") {
    ScenarioSpec s = base;
    s.parallel.vpp = 2;
    s.model.num_layers = 6;
    CHECK(failing_field(s) == "parallelism.vpp");
  }
  SECTION("sequence split by sequence parallelism") {
    ScenarioSpec s = base;
    s.workload.seq_len = 16380;  // not a multiple of tp 8
    CHECK(failing_field(s) == "workload.seq_len");
  }
  SECTION("unknown schedule") {
    ScenarioSpec s = base;
    s.schedule.name = "fastest";
    CHECK(failing_field(s) == "schedule.name");
  }
  SECTION("profile must belong to the scenario's cluster") {
    ScenarioSpec s = base;
    s.profile = moeplan::model::CostProfileSpec{"p", "some-other-cluster", {}, 1.0};
    CHECK(failing_field(s) == "profile");
  }
}

TEST_CASE("model::validate checks a model on its own", "[model]") {
  moeplan::model::ModelSpec m = moeplan::io::load_model("mixtral-8x7b");
  SECTION("top-k above the number of experts") {
    m.moe.top_k = 9;
    CHECK_THROWS_WITH(moeplan::model::validate(m), Catch::Contains("exceeds num_experts"));
  }
  SECTION("query heads must group over KV heads") {
    m.num_kv_heads = 5;
    CHECK_THROWS_WITH(moeplan::model::validate(m), Catch::Contains("not a multiple of num_kv_heads"));
  }
  SECTION("element size") {
    m.dtype_bytes = 3;
    CHECK_THROWS_WITH(moeplan::model::validate(m), Catch::Contains("must be 1, 2 or 4"));
  }
}

TEST_CASE("model::validate_tensor_parallel_heads: Megatron-Core's rule, tp divides query and KV heads", "[model]") {
  // Megatron-Core's TransformerConfig requires num_attention_heads and
  // num_query_groups (KV heads) to be multiples of tensor_model_parallel_size:
  // KV heads are split, never replicated. Mixtral 8x22B: 48 query, 8 KV heads.
  const moeplan::model::ModelSpec m = moeplan::io::load_model("mixtral-8x22b");
  auto reason = [&](std::int64_t tp) -> std::string {
    try {
      moeplan::model::validate_tensor_parallel_heads(m, tp);
    } catch (const Error& e) {
      CHECK(e.field() == "parallelism.tp");
      return e.reason();
    }
    return "";
  };
  SECTION("tp dividing both is accepted") {
    for (std::int64_t tp : {1, 2, 4, 8}) CHECK(reason(tp).empty());
  }
  SECTION("tp 16 divides the 48 query heads but not the 8 KV heads: rejected (no replication)") {
    CHECK(reason(16) ==
          "num_heads 48 and num_kv_heads 8 must both be divisible by tp 16 (Megatron-Core splits query and KV heads "
          "over tp and does not replicate KV heads)");
  }
  SECTION("tp 12 divides the query heads only, tp 32 neither") {
    CHECK_FALSE(reason(12).empty());
    CHECK_FALSE(reason(32).empty());
  }
}

TEST_CASE("model::validate rejects a scenario whose tp would replicate KV heads", "[model]") {
  // 128 GPUs = tp 16 x pp 4 x dp 2: everything else about the mapping is valid,
  // so only the head rule can reject it (the old rule let tp be a multiple of
  // the KV heads, replicating them, which Megatron-Core refuses).
  ScenarioSpec s = moeplan::io::load_scenario("folding-mixtral-8x22b-128");
  REQUIRE(failing_field(s).empty());
  s.parallel.tp = 16;
  s.parallel.dp = 2;
  CHECK(failing_field(s) == "parallelism.tp");
}
