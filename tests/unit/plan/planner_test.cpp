#include <catch2/catch.hpp>

#include <algorithm>

#include <moeplan/io/loader.hpp>
#include <moeplan/model/families.hpp>
#include <moeplan/plan/planner.hpp>

using namespace moeplan;

// The Planner interface (issue 17 item 1) must give each family's own answer:
// the expected values come from the family planners called directly, and the
// choice is recomputed here as the minimum over what they evaluated.
TEST_CASE("plan::planner_for gives each family's own planner answer, ranked", "[plan][planner]") {
  SECTION("FoldMoE: the chosen degree and time are plan_foldmoe's best requested schedule") {
    const plan::ScenarioRun run(io::load_scenario("foldmoe-gpt-moe-s-4k"));
    const plan::PlanResult r = plan::planner_for("foldmoe").plan(run, {"all", 1});
    const plan::FoldMoePlan direct = plan::plan_foldmoe(run.spec(), run.costs(), model::family_schedules("foldmoe"));
    const auto best = std::min_element(direct.schedules.begin(), direct.schedules.end(), [](auto& a, auto& b) {
      return a.best.iteration_ms < b.best.iteration_ms;
    });
    CHECK(r.chosen.schedule == best->best.schedule);
    CHECK(r.chosen.iteration_ms == best->best.iteration_ms);
    CHECK(*r.chosen.knobs.degree == best->best.degree);
    CHECK(r.candidates.size() == direct.schedules.size());
    CHECK(r.baseline("none")->iteration_ms == direct.schedules[0].best.iteration_ms);
    // tokens/s by hand: the scenario file's global_batch_size 2 (dp 2 x micro_batch_size 1)
    // sequences of seq_len 4,096 tokens per iteration.
    const double tokens = 2.0 * 4096.0;
    CHECK(run.spec().workload.global_batch_size == 2);
    CHECK(r.tokens_per_s() == Approx(tokens / (r.chosen.iteration_ms / 1000.0)).epsilon(1e-12));
  }
  SECTION("a single requested schedule is the only candidate, the baselines stay") {
    const plan::ScenarioRun run(io::load_scenario("foldmoe-gpt-moe-s-4k"));
    const plan::PlanResult r = plan::planner_for("foldmoe").plan(run, {"aaam", 1});
    REQUIRE(r.candidates.size() == 1);
    CHECK(r.chosen.schedule == "aaam");
    CHECK(r.baselines.size() == 2);
  }
  SECTION("FlowMoE: R and Sp of plan_flowmoe's best") {
    const plan::ScenarioRun run(io::load_scenario("flowmoe-gpt2-tiny-moe-c1"));
    const plan::PlanResult r = plan::planner_for("flowmoe").plan(run, {"all", 1});
    const plan::FlowMoePlan direct =
        plan::plan_flowmoe(run.spec(), run.costs(), model::family_schedules("flowmoe"), {}, 1);
    const auto best = std::min_element(direct.schedules.begin(), direct.schedules.end(), [](auto& a, auto& b) {
      return a.best.iteration_ms < b.best.iteration_ms;
    });
    CHECK(r.chosen.schedule == best->best.schedule);
    CHECK(r.chosen.iteration_ms == best->best.iteration_ms);
    CHECK(r.chosen.knobs.ar_chunk_bytes.value_or(0) == best->ar_chunk_bytes);
    for (std::size_t i = 1; i < r.candidates.size(); ++i)
      CHECK(r.candidates[i - 1].iteration_ms <= r.candidates[i].iteration_ms);
  }
  SECTION("folding: the best fitting folded mapping; coupled is the baseline") {
    const plan::ScenarioRun run(io::load_scenario("folding-qwen2-57b-a14b-64"));
    const plan::PlanResult r = plan::planner_for("folding").plan(run, {"all", 1});
    const auto folded = plan::search_mappings(run.spec(), run.costs(), "folded", 1);
    const auto coupled = plan::search_mappings(run.spec(), run.costs(), "coupled", 1);
    CHECK(r.chosen.iteration_ms == folded.front().iteration_ms);
    CHECK(r.chosen.knobs.parallelism->tp == folded.front().config.tp);
    CHECK(*r.chosen.mfu == folded.front().mfu);
    const auto fitting = std::count_if(folded.begin(), folded.end(), [](auto& f) { return f.fits; });
    CHECK(static_cast<std::ptrdiff_t>(r.candidates.size()) == fitting);
    REQUIRE(r.baseline("coupled") != nullptr);
    CHECK(r.baseline("coupled")->iteration_ms == coupled.front().iteration_ms);
    // Folding searches a superset of the coupled mappings, so it is never slower.
    CHECK(r.chosen.iteration_ms <= coupled.front().iteration_ms);
  }
  SECTION("an unknown family and a schedule on folding are input errors naming the field") {
    CHECK_THROWS_WITH(plan::planner_for("bogus"), Catch::Contains("no planner for family"));
    const plan::ScenarioRun run(io::load_scenario("folding-qwen2-57b-a14b-64"));
    CHECK_THROWS_WITH(plan::planner_for("folding").plan(run, {"1a1m", 1}), Catch::Contains("--schedule"));
  }
}

TEST_CASE("plan::plan_spec is the chosen candidate against the first baseline", "[plan][planner]") {
  plan::PlanResult r;
  r.scenario = "s";
  r.family = "foldmoe";
  r.chosen.schedule = "1a1m";
  r.chosen.iteration_ms = 80;
  r.chosen.knobs.degree = 6;
  r.baselines = {{"none", 100}, {"tutel", 90}};
  const model::PlanSpec spec = plan::plan_spec(r);
  CHECK(spec.schedule == "1a1m");
  CHECK(spec.baseline_ms == 100);
  CHECK(spec.speedup == Approx(1.25));  // 100 / 80
  CHECK(*spec.knobs.degree == 6);
  CHECK(spec.family == "foldmoe");
}
