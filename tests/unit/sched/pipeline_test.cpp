#include <catch2/catch.hpp>

#include <map>
#include <set>

#include <moeplan/sched/pipeline.hpp>
#include <moeplan/sim/analysis.hpp>
#include <moeplan/sim/engine.hpp>

using namespace moeplan;

TEST_CASE("sched::pipeline_order issues every forward and backward once, warm-up first", "[sched][pipeline]") {
  for (std::int64_t p : {1, 2, 4})
    for (std::int64_t v : {1, 2, 3})
      for (std::int64_t m : {4, 8, 12}) {
        if (v > 1 && (p == 1 || m % p != 0)) continue;
        for (std::int64_t stage = 0; stage < p; ++stage) {
          const auto order = sched::pipeline_order(p, v, m, stage);
          std::set<std::tuple<bool, std::int64_t, std::int64_t>> seen;
          for (const auto& step : order) seen.insert({step.forward, step.chunk, step.micro_batch});
          INFO("p " << p << " v " << v << " m " << m << " stage " << stage);
          CHECK(order.size() == static_cast<std::size_t>(2 * m * v));
          CHECK(seen.size() == order.size());
          CHECK(order.front().forward);
          CHECK_FALSE(order.back().forward);
        }
      }
  // Stage 0 of a 4-stage 1F1B: 3 warm-up forwards, then F B alternating.
  const auto s0 = sched::pipeline_order(4, 1, 8, 0);
  CHECK((s0[0].forward && s0[1].forward && s0[2].forward && s0[3].forward && !s0[4].forward));
}

TEST_CASE("sched::build_pipeline 1F1B takes (m + p - 1)(f + b) without communication", "[sched][pipeline]") {
  // Narayanan et al. 2021: 1F1B's bubble is (p - 1)(f + b) on top of m (f + b).
  for (std::int64_t p : {1, 2, 4, 8})
    for (std::int64_t m : {1, 4, 16}) {
      sched::PipelineSpec spec;
      spec.stages = p;
      spec.micro_batches = m;
      spec.chunk = {1.0, 2.0, 0.0};
      const auto built = sched::build_pipeline(spec);
      INFO("p " << p << " m " << m);
      CHECK(sim::simulate(built.graph).makespan_ms == Approx(static_cast<double>(m + p - 1) * 3.0));
    }
}

TEST_CASE("sched::build_pipeline interleaving shrinks the bubble", "[sched][pipeline]") {
  // Same model split into v chunks per stage: each chunk does 1/v of the work;
  // the bubble falls to (p - 1)(f + b) / v (Narayanan et al. 2021).
  const std::int64_t p = 4, m = 8;
  sched::PipelineSpec plain;
  plain.stages = p;
  plain.micro_batches = m;
  plain.chunk = {2.0, 4.0, 0.0};
  sched::PipelineSpec inter = plain;
  inter.virtual_stages = 2;
  inter.chunk = {1.0, 2.0, 0.0};
  const double t1 = sim::simulate(sched::build_pipeline(plain).graph).makespan_ms;
  const double t2 = sim::simulate(sched::build_pipeline(inter).graph).makespan_ms;
  CHECK(t1 == Approx(static_cast<double>(m + p - 1) * 6.0));
  CHECK(t2 < t1);
  CHECK(t2 >= static_cast<double>(m) * 6.0);  // never below the work itself
  sched::PipelineSpec bad = inter;
  bad.micro_batches = 6;
  CHECK_THROWS_WITH(sched::build_pipeline(bad), Catch::Contains("multiple of pp"));
}

TEST_CASE("sched::build_pipeline labels its tasks with the FLOPs and bytes they stand for", "[sched][pipeline]") {
  // Issue 14, item 9: the folding trace's args.size was 0 for every task (the
  // builder never set it). 2 stages, 2 micro-batches, 1F1B: per stage 2
  // forwards (100 FLOPs each) and 2 backwards (200 FLOPs); stage 0 sends 2
  // activations, stage 1 sends 2 gradients (7 bytes each); one optimizer step
  // per stage (9 bytes).
  sched::PipelineSpec spec;
  spec.stages = 2;
  spec.micro_batches = 2;
  spec.chunk = {1.0, 2.0, 0.5};
  spec.chunk.forward_flops = 100;
  spec.chunk.backward_flops = 200;
  spec.chunk.p2p_bytes = 7;
  spec.optimizer_ms = 0.25;
  spec.optimizer_bytes = 9;
  const dag::TaskGraph g = sched::build_pipeline(spec).graph;
  std::map<std::pair<model::OpClass, double>, int> count;  // (op, size) -> tasks
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    ++count[{g.op(t), g.size(t)}];
    if (g.op(t) == model::OpClass::Gemm) CHECK(g.size(t) == (g.phase(t) == dag::Phase::Forward ? 100 : 200));
  }
  CHECK(count[{model::OpClass::Gemm, 100}] == 4);
  CHECK(count[{model::OpClass::Gemm, 200}] == 4);
  CHECK(count[{model::OpClass::P2P, 7}] == 4);
  CHECK(count[{model::OpClass::ReduceScatter, 9}] == 2);
  CHECK(count.size() == 4);
}

TEST_CASE("sched::PipelineOrder gives pipeline_order's steps one at a time", "[sched][pipeline]") {
  // The vector is the first formulation (Megatron's loops, pushed in order);
  // the closed form must name the same step at every index.
  std::size_t compared = 0;
  for (std::int64_t p : {1, 2, 3, 4, 7})
    for (std::int64_t v : {1, 2, 3})
      for (std::int64_t m : {1, 2, 5, 8, 14, 21})
        for (std::int64_t stage = 0; stage < p; ++stage) {
          if (v > 1 && m % p != 0) continue;  // interleaving needs a multiple of pp
          const std::vector<sched::PipelineStep> order = sched::pipeline_order(p, v, m, stage);
          const sched::PipelineOrder closed(p, v, m, stage);
          REQUIRE(closed.size() == static_cast<std::int64_t>(order.size()));
          for (std::int64_t i = 0; i < closed.size(); ++i) {
            const sched::PipelineStep a = closed.step(i), b = order[static_cast<std::size_t>(i)];
            INFO("pp " << p << " vpp " << v << " m " << m << " stage " << stage << " step " << i);
            CHECK(a.forward == b.forward);
            CHECK(a.chunk == b.chunk);
            CHECK(a.micro_batch == b.micro_batch);
          }
          ++compared;
        }
  CHECK(compared > 150);
}
