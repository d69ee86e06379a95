#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/model_stats.hpp>
#include <moeplan/plan/folding.hpp>

using namespace moeplan;

TEST_CASE("plan::search_mappings: folded is never worse than coupled, and every pick fits", "[plan][folding]") {
  const model::ScenarioSpec s = io::load_scenario("folding-qwen2-57b-a14b-64");
  const cost::CostModel costs(*s.profile);
  const auto folded = plan::search_mappings(s, costs, "folded", 2);
  const auto coupled = plan::search_mappings(s, costs, "coupled", 2);
  REQUIRE(!folded.empty());
  REQUIRE(!coupled.empty());
  CHECK(folded.front().fits);
  CHECK(folded.front().iteration_ms <= coupled.front().iteration_ms);  // the coupled space is a subset
  CHECK(folded.size() > coupled.size());
  for (const auto& r : coupled) CHECK(r.config.etp == r.config.tp);  // before folding
  // Sorted: fitting mappings first, by iteration time.
  for (std::size_t i = 1; i < folded.size(); ++i)
    if (folded[i].fits) CHECK(folded[i - 1].iteration_ms <= folded[i].iteration_ms);
  // Results do not depend on the thread count.
  const auto one = plan::search_mappings(s, costs, "folded", 1);
  CHECK(one.front().iteration_ms == folded.front().iteration_ms);
  CHECK(one.front().config.tp == folded.front().config.tp);
}

TEST_CASE("plan::price_mapping reports MFU and memory consistently", "[plan][folding]") {
  const model::ScenarioSpec s = io::load_scenario("folding-mixtral-8x22b-128");
  const cost::CostModel costs(*s.profile);
  plan::FoldingConfig c;
  c.tp = 4;
  c.pp = 4;
  c.ep = 8;
  c.etp = 1;
  const plan::FoldingResult r = plan::price_mapping(s, costs, c);
  CHECK(r.config.dp == 8);   // 128 / (4 x 4)
  CHECK(r.config.edp == 4);  // 128 / (1 x 8 x 4)
  // MFU = 3 x forward FLOPs per token x tokens / (time x GPUs x 989.5 TFLOP/s).
  const double flops = 3.0 * 256 * 4096 * model::forward_flops_per_token(s.model, 4096);
  CHECK(r.mfu == Approx(flops / (r.iteration_ms / 1e3 * 128 * 989.5e12)));
  CHECK(r.mfu > 0.05);
  CHECK(r.mfu < 0.8);
  // Parameters held: 14 layers x (attention / tp + router + 1 expert / etp) + embedding / tp.
  const double expert = 3.0 * 6144 * 16384;
  const double attention = (2.0 * 6144 * 6144 + 2.0 * 6144 * 1024 + 2 * 6144) / 4;
  CHECK(plan::params_per_gpu(s.model, r.config) == Approx(14 * (attention + 6144.0 * 8 + expert) + 32000.0 * 6144 / 4));
  // A GPU too small for anything: nothing fits, and the planner says so.
  model::ScenarioSpec tiny = s;
  tiny.cluster.gpu.memory_bytes = 1e9;
  CHECK_FALSE(plan::price_mapping(tiny, costs, c).fits);
  CHECK_THROWS_AS(plan::price_mapping(s, costs, plan::FoldingConfig{3, 1, 1, 1, 1, 1, 1, 0, 0}), Error);
}

TEST_CASE("plan::price_mapping: recomputation trades memory", "[plan][folding]") {
  plan::FoldingConfig c;
  c.tp = 4;
  c.pp = 4;
  c.ep = 8;
  c.etp = 1;
  auto memory = [&](const char* recompute) {
    const model::ScenarioSpec s = io::load_scenario("folding-mixtral-8x22b-128", {{"schedule.recompute", recompute}});
    const cost::CostModel costs(*s.profile);
    return plan::price_mapping(s, costs, c).memory_bytes_per_gpu;
  };
  CHECK(memory("full") < memory("selective"));
  CHECK(memory("selective") < memory("none"));
}
