#include <catch2/catch.hpp>

#include <optional>
#include <set>
#include <tuple>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/mapping_pricing.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/plan/joint.hpp>
#include <moeplan/plan/overlap_probe.hpp>
#include <moeplan/plan/planner.hpp>

#include "folding_toy.hpp"

using namespace moeplan;
using moeplan::testing::mapping;
using moeplan::testing::toy_scenario_for_overlap;

namespace {

// A probe as the families would report it on one layer (and, consistently,
// on two): the schedule saves `forward` and `backward` ms per layer against
// its family's none.
plan::ProbedSchedule hand_probe(double forward, double backward) {
  plan::ProbedSchedule p;
  p.schedule = {"fsmoe", "fsmoe", 0};
  p.none_one = {10, 20, 30};
  p.none_two = {20, 40, 60};
  p.one = {10 - forward, 20 - backward, 30 - forward - backward};
  p.two = {20 - 2 * forward, 40 - 2 * backward, 60 - 2 * forward - 2 * backward};
  return p;
}

}  // namespace

TEST_CASE("plan::ProbedSchedule and GradientProbe are linear in the layers (by hand)", "[plan][joint]") {
  SECTION("savings: the first layer's, then each further layer's") {
    // Forward: none 10 and 20 ms on 1 and 2 layers, the schedule 8 and 15:
    // saves 2 on one layer and 5 on two, so 2 + (n - 1) x 3: 11 ms on 4 layers.
    plan::ProbedSchedule p;
    p.none_one = {10, 30, 40};
    p.none_two = {20, 60, 80};
    p.one = {8, 29, 37};
    p.two = {15, 57, 72};
    CHECK(p.forward_saved_ms(1) == Approx(2));
    CHECK(p.forward_saved_ms(4) == Approx(11));
    // Backward: 1 then 3: 1 + (n - 1) x 2 = 7 on 4 layers.
    CHECK(p.backward_saved_ms(4) == Approx(7));
  }
  SECTION("the hidden fraction of the gradient traffic") {
    // The none pays 4 ms of gradient traffic on one layer and 6 on two: 4 + 2 (n - 1),
    // 12 on 5 layers. The schedule leaves 3 ms exposed whatever the layers:
    // it hides 1 - 3 / 12 = 0.75 on 5 layers, 1 - 3 / 4 = 0.25 on one.
    const plan::GradientProbe g{3, 3, 4, 6};
    CHECK(g.hidden_fraction(5) == Approx(0.75));
    CHECK(g.hidden_fraction(1) == Approx(0.25));
    // More exposed than the none's whole traffic hides nothing; less than none all of it.
    CHECK(plan::GradientProbe{9, 9, 4, 6}.hidden_fraction(2) == 0.0);
    CHECK(plan::GradientProbe{-1, -1, 4, 6}.hidden_fraction(2) == 1.0);
    // No traffic (dp = edp = 1): nothing to hide.
    CHECK(plan::GradientProbe{0, 0, 0, 0}.hidden_fraction(3) == 0.0);
  }
}

TEST_CASE("plan::price_mapping with a StageOverlap: a hand-built overlap changes the best toy mapping",
          "[plan][joint]") {
  // The toy (folding_toy.hpp; folding_test.cpp derives its times): with no
  // overlap, tp 2 ep 2 etp 1 is best at 4.836 ms (compute 4.452, TP 0.128 and
  // EP 0.064 ms per pass); tp 2 ep 1 etp 2 is second at 4.964 (TP 0.128 and
  // ETP 0.128 per pass). One layer, pp 1: a chunk is the layer, one micro-batch.
  // Every iteration also runs the model's ends, e = 1.216 ms (folding_toy.hpp,
  // toy_ends_ms(8, 2)), which no overlap shortens.
  const model::ScenarioSpec s = toy_scenario_for_overlap();
  const cost::CostModel costs(*s.profile);
  const plan::MappingResult x = plan::price_mapping(s, costs, mapping(2, 1, 1, 2, 1));
  const plan::MappingResult y = plan::price_mapping(s, costs, mapping(2, 1, 1, 1, 2));
  const double e = moeplan::testing::toy_ends_ms(8, 2);
  REQUIRE(x.iteration_ms == Approx(4.836 + e));
  REQUIRE(y.iteration_ms == Approx(4.964 + e));
  CHECK(y.stage.layer_forward_comm_ms == Approx(0.256));
  CHECK(y.stage.layer_backward_comm_ms == Approx(0.256));
  SECTION("an overlap that hides 0.2 ms of each pass of y makes y the best: 4.964 - 0.4 = 4.564 < 4.836") {
    const plan::StageOverlap o = plan::stage_overlap(y, hand_probe(0.2, 0.2), 0.0);
    CHECK(o.chunk_forward_saved_ms == Approx(0.2));
    CHECK(o.chunk_backward_saved_ms == Approx(0.2));
    CHECK(o.optimizer_saved_ms == 0.0);
    const plan::MappingResult yo = plan::price_mapping(s, costs, y.config, nullptr, &o);
    CHECK(yo.iteration_ms == Approx(4.564 + e));
    CHECK(yo.iteration_ms < x.iteration_ms);
    CHECK(yo.stage.chunk_forward_ms == Approx(1.484 + 0.256 - 0.2));
  }
  SECTION("no more than the layer's communication is hidden: 4.964 - 2 x 0.256 = 4.452, the compute alone") {
    const plan::StageOverlap o = plan::stage_overlap(y, hand_probe(0.5, 0.5), 0.0);
    CHECK(o.chunk_forward_saved_ms == Approx(0.256));
    CHECK(plan::price_mapping(s, costs, y.config, nullptr, &o).iteration_ms == Approx(4.452 + e));
  }
  SECTION("a schedule slower than its none lengthens the chunks: 4.964 + 2 x 0.1") {
    const plan::StageOverlap o = plan::stage_overlap(y, hand_probe(-0.1, -0.1), 0.0);
    CHECK(plan::price_mapping(s, costs, y.config, nullptr, &o).iteration_ms == Approx(5.164 + e));
  }
  SECTION("hidden gradients shorten the optimizer step: tp 2 ep 1 etp 1, 5.476 - 0.5 x 0.512 = 5.22") {
    // Experts have edp = 2: their reduce-scatter moves 4 B x 128 parameters =
    // 512 B at 1e-3 ms/B = 0.512 ms; the dense groups have one rank (dp x cp = 1).
    const plan::MappingResult z = plan::price_mapping(s, costs, mapping(2, 1, 1, 1, 1));
    REQUIRE(z.iteration_ms == Approx(5.476 + e));
    CHECK(z.stage.layer_gradient_rs_ms == Approx(0.512));
    const plan::StageOverlap o = plan::stage_overlap(z, hand_probe(0, 0), 0.5);
    CHECK(o.optimizer_saved_ms == Approx(0.256));
    CHECK(plan::price_mapping(s, costs, z.config, nullptr, &o).iteration_ms == Approx(5.22 + e));
  }
  SECTION("the search's lower bound: every chunk's communication hidden") {
    // x: forward chunk 1.484 + 0.192 = 1.676, backward 2.968 + 0.192 = 3.160;
    // keeping 1.484 / 1.676 of the forward is the smaller share, and there is
    // no optimizer step: (4.836 + e) x 1.484 / 1.676.
    CHECK(plan::joint_lower_bound_ms(x) == Approx((4.836 + e) * 1.484 / 1.676));
  }
}

TEST_CASE("plan::probe_scenario and probe_layer_shape on the toy", "[plan][joint]") {
  const model::ScenarioSpec s = toy_scenario_for_overlap();
  const cost::CostModel costs(*s.profile);
  const plan::LayerShape shape{2, 1, 2, 1, 1, 1, 1};
  SECTION("the probe: the shape's parallelism, pp 1, one micro-batch per DP rank, every layer MoE") {
    const model::ScenarioSpec p = plan::probe_scenario(s, {2, 1, 2, 1, 3, 4, 2}, 2, "foldmoe");
    CHECK(p.model.num_layers == 2);
    CHECK(p.model.moe_layer == std::vector<bool>{true, true});
    CHECK(p.parallel.tp == 2);
    CHECK(p.parallel.ep == 2);
    CHECK(p.parallel.pp == 1);
    CHECK(p.parallel.dp == 4);
    CHECK(p.parallel.edp == 2);
    CHECK(p.parallel.sequence_parallel);
    CHECK(p.workload.global_batch_size == 3 * 4);
    CHECK(p.workload.micro_batches_per_rank(4) == 1);
    CHECK(p.schedule.family == "foldmoe");
  }
  SECTION("FoldMoE's layers run one after another: two layers of none take twice one") {
    const std::vector<plan::ProbedSchedule> probes = plan::probe_layer_shape(s, costs, shape, {"foldmoe"});
    REQUIRE(!probes.empty());
    CHECK(probes.front().none_two.forward_ms == Approx(2 * probes.front().none_one.forward_ms));
    CHECK(probes.front().none_two.backward_ms == Approx(2 * probes.front().none_one.backward_ms));
    // d is at most the 8 / tp = 4 tokens a rank holds of the sequence: 2 and 4 of {2, 4, ..., 32}.
    for (const plan::ProbedSchedule& p : probes) CHECK((p.schedule.degree == 2 || p.schedule.degree == 4));
  }
  SECTION("FlowMoE at R = 1 pipelines nothing: it saves exactly nothing") {
    // Exactly one probe is tutel at R = 1: FlowMoE lists tutel once among its
    // schedules and 1 once among its degrees {1, 2, 4, 8, 16}, and one chunk
    // asks nothing of the shape, so the builder cannot refuse it. Counted, so
    // that the checks below cannot pass without running.
    int at_one = 0;
    for (const plan::ProbedSchedule& p : plan::probe_layer_shape(s, costs, shape, {"flowmoe"}))
      if (p.schedule.degree == 1 && p.schedule.schedule == "tutel") {
        ++at_one;
        CHECK(p.forward_saved_ms(3) == 0.0);
        CHECK(p.backward_saved_ms(3) == 0.0);
      }
    REQUIRE(at_one == 1);
  }
}

TEST_CASE("plan::search_joint is never worse than the folding search or the overlap at a fixed mapping",
          "[plan][joint]") {
  for (const char* name : {"folding-mixtral-8x22b-128k-1024", "folding-mixtral-8x22b-64k-512"}) {
    INFO(name);
    const model::ScenarioSpec s = io::load_scenario(name);
    const cost::CostModel costs(*s.profile);
    // The folding search by its own path: its best fitting mapping with no overlap.
    const std::vector<plan::MappingResult> folded = plan::search_mappings(s, costs, "folded", 1);
    REQUIRE(folded.front().fits);
    // A fixed mapping that fits (the scenarios' own do not): the tenth of the folding ranking.
    const cost::MappingConfig fixed = folded[9].config;
    plan::JointOptions o;
    o.threads = 1;
    const plan::JointSearch j = plan::search_joint(s, costs, o, fixed);
    CHECK(j.best_no_overlap.priced.iteration_ms == folded.front().iteration_ms);
    CHECK(j.best().priced.iteration_ms <= j.best_no_overlap.priced.iteration_ms);
    REQUIRE(j.default_mapping);
    CHECK(j.default_mapping->priced.iteration_ms <= folded[9].iteration_ms);  // none is one of its options
    CHECK(j.best().priced.iteration_ms <= j.default_mapping->priced.iteration_ms);
    for (std::size_t i = 0; i < j.ranked.size(); ++i) {
      CHECK(j.ranked[i].priced.fits);
      if (i > 0) CHECK(j.ranked[i - 1].priced.iteration_ms <= j.ranked[i].priced.iteration_ms);
      // The bound the search orders by never exceeds what a mapping achieves.
      const plan::MappingResult alone = plan::price_mapping(s, costs, j.ranked[i].priced.config);
      CHECK(plan::joint_lower_bound_ms(alone) <= j.ranked[i].priced.iteration_ms * (1 + 1e-12));
    }
    // The best again, priced on its own (price_joint probes its shape afresh).
    const plan::JointResult again = plan::price_joint(s, costs, j.best().priced.config, j.best().overlap);
    CHECK(again.priced.iteration_ms == Approx(j.best().priced.iteration_ms).epsilon(1e-12));
    // Two threads: the same answer.
    o.threads = 2;
    const plan::JointSearch two = plan::search_joint(s, costs, o, fixed);
    CHECK(two.best().priced.iteration_ms == j.best().priced.iteration_ms);
    CHECK(two.best().label() == j.best().label());
    CHECK(two.evaluated == j.evaluated);
    CHECK(two.configurations == j.configurations);
  }
}

TEST_CASE("plan::search_joint: the pruned search's best are the exhaustive search's", "[plan][joint]") {
  const model::ScenarioSpec s = io::load_scenario("folding-mixtral-8x22b-128k-1024");
  const cost::CostModel costs(*s.profile);
  plan::JointOptions pruned;
  pruned.mode = "coupled";  // fewer mappings: the exhaustive search stays quick
  pruned.exact_top = 3;
  plan::JointOptions all = pruned;
  all.exact_top = 1'000'000;  // no bound can stop it: every fitting mapping is evaluated
  const plan::JointSearch a = plan::search_joint(s, costs, pruned), b = plan::search_joint(s, costs, all);
  CHECK(b.evaluated == b.fitting);
  CHECK(a.evaluated < b.evaluated);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(a.ranked[i].priced.iteration_ms == b.ranked[i].priced.iteration_ms);
    CHECK(a.ranked[i].label() == b.ranked[i].label());
  }
}

TEST_CASE("plan::plan_joint plans a mapping family's joint search and refuses other families", "[plan][joint]") {
  const plan::ScenarioRun run(io::load_scenario("folding-mixtral-8x22b-128k-1024"));
  const plan::PlanResult r = plan::plan_joint(run, {"all", 1});
  REQUIRE(r.search_as<plan::JointRecord>() != nullptr);
  const plan::JointSearch& j = r.search_as<plan::JointRecord>()->search();
  CHECK(r.family == "joint");
  CHECK(r.chosen.schedule == j.best().label());
  CHECK(r.chosen.iteration_ms == j.best().priced.iteration_ms);
  REQUIRE(r.baselines.size() == 2);
  CHECK(r.baselines[0].name == "no-overlap");
  CHECK(r.baselines[0].iteration_ms == j.best_no_overlap.priced.iteration_ms);
  CHECK(r.baselines[1].name == "default-mapping");
  CHECK(r.candidates.size() == j.ranked.size());
  const plan::ScenarioRun other(io::load_scenario("foldmoe-gpt-moe-s-4k"));
  try {
    plan::plan_joint(other, {"all", 1});
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.field() == "request.joint");  // the CLI names it --joint, the Python module joint=
    CHECK_THAT(e.reason(), Catch::Contains("searches the mappings of a folding scenario"));
  }
}

namespace {

// The distinct mappings a search of `mode` can try, counted apart from the
// search: the enumeration's configurations as a set (a duplicate in the
// enumeration would be priced twice, and counted once here).
std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>>
distinct_mappings(const model::ScenarioSpec& s, const std::string& mode) {
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>>
      out;
  for (const cost::MappingConfig& c : plan::enumerate_mappings(s, mode))
    out.insert({c.tp, c.cp, c.pp, c.vpp, c.ep, c.etp, c.micro_batch});
  return out;
}

}  // namespace

TEST_CASE("plan::search_joint prices each distinct mapping once, whatever schedules run on it", "[plan][joint]") {
  // cost::layer_pricings counts every price_layers call of the process: the
  // search's, its probes', the default mapping's.
  for (const char* name : {"folding-mixtral-8x22b-64k-512", "folding-qwen2-57b-a14b-64"}) {
    INFO(name);
    const model::ScenarioSpec s = io::load_scenario(name);
    const cost::CostModel costs(*s.profile);
    plan::JointOptions o;
    o.mode = "coupled";
    o.threads = 2;
    const auto distinct = distinct_mappings(s, o.mode);
    REQUIRE(distinct.size() > 10);
    SECTION("no default mapping: one pricing per distinct mapping") {
      const std::uint64_t before = cost::layer_pricings();
      const plan::JointSearch j = plan::search_joint(s, costs, o);
      CHECK(cost::layer_pricings() - before == distinct.size());
      CHECK(j.configurations > j.evaluated);  // several schedules ran on the mappings priced once
    }
    SECTION("a default mapping the search tries is not priced again") {
      const std::vector<plan::MappingResult> coupled = plan::search_mappings(s, costs, o.mode, 1);
      const cost::MappingConfig fixed = coupled[1].config;
      const std::uint64_t before = cost::layer_pricings();
      const plan::JointSearch j = plan::search_joint(s, costs, o, fixed);
      CHECK(cost::layer_pricings() - before == distinct.size());
      REQUIRE(j.default_mapping);
    }
    SECTION("a default mapping outside the search is priced once more") {
      // A folded mapping the coupled search does not try (its etp differs from its tp).
      std::optional<cost::MappingConfig> outside;
      for (const plan::MappingResult& f : plan::search_mappings(s, costs, "folded", 1))
        if (distinct.count({f.config.tp, f.config.cp, f.config.pp, f.config.vpp, f.config.ep, f.config.etp,
                            f.config.micro_batch}) == 0) {
          outside = f.config;
          break;
        }
      REQUIRE(outside);
      REQUIRE(outside->etp != outside->tp);
      const cost::MappingConfig own = *outside;
      const std::uint64_t before = cost::layer_pricings();
      const plan::JointSearch j = plan::search_joint(s, costs, o, own);
      CHECK(cost::layer_pricings() - before == distinct.size() + 1);
      REQUIRE(j.default_mapping);
    }
  }
}
