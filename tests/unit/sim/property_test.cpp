#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include <moeplan/sim/analysis.hpp>
#include <moeplan/sim/engine.hpp>
#include <moeplan/sim/synthetic_dag.hpp>

using namespace moeplan;

namespace {

// Longest path by durations, ignoring resources: a lower bound on the makespan.
double longest_path_ms(const dag::TaskGraph& g) {
  std::vector<double> finish(g.size(), 0.0);
  const dag::CsrGraph& pred = g.predecessors_graph();
  // Task ids are a topological order in synthetic graphs (dependencies point back).
  double best = 0;
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    double ready = 0;
    for (auto e : boost::make_iterator_range(out_edges(t, pred))) ready = std::max(ready, finish[target(e, pred)]);
    finish[t] = ready + g.duration_ms(t);
    best = std::max(best, finish[t]);
  }
  return best;
}

}  // namespace

TEST_CASE("sim::simulate on random DAGs respects the bounds", "[sim][property]") {
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    sim::RandomDagOptions o;
    o.seed = seed;
    o.logical_tasks = 40 + seed * 7;
    o.priority_comm = seed % 2 == 0;
    o.ranks = 1 + static_cast<std::int32_t>(seed % 3);
    const dag::TaskGraph g = sim::random_dag(o);
    const sim::Timeline tl = sim::simulate(g);
    INFO("seed " << seed);
    double total = 0;
    for (dag::TaskId t = 0; t < g.size(); ++t) total += g.duration_ms(t);
    const sim::Summary s = sim::summarize(g, tl);
    double busiest = 0;
    for (const auto& r : s.resources) busiest = std::max(busiest, r.busy_ms);
    CHECK(tl.makespan_ms >= longest_path_ms(g) - 1e-9);
    CHECK(tl.makespan_ms >= busiest - 1e-9);
    CHECK(tl.makespan_ms <= total + 1e-9);
    const dag::CsrGraph& succ = g.successors_graph();
    bool respected = true;
    for (dag::TaskId t = 0; t < g.size(); ++t)
      for (auto e : boost::make_iterator_range(out_edges(t, succ)))
        respected = respected && tl.start_ms[target(e, succ)] >= tl.end_ms[t];
    CHECK(respected);
    // No two tasks overlap on one resource.
    bool exclusive = true;
    std::vector<std::vector<std::pair<double, double>>> lanes(g.resources().size());
    for (dag::TaskId t = 0; t < g.size(); ++t)
      for (auto r : g.resources(t)) lanes[r].emplace_back(tl.start_ms[t], tl.end_ms[t]);
    for (auto& lane : lanes) {
      std::sort(lane.begin(), lane.end());
      for (std::size_t i = 1; i < lane.size(); ++i) exclusive = exclusive && lane[i].first >= lane[i - 1].second;
    }
    CHECK(exclusive);
    // The critical path ends at the makespan and is a chain of touching tasks.
    const auto path = sim::critical_path(g, tl);
    REQUIRE(!path.empty());
    CHECK(tl.end_ms[path.back().task] == tl.makespan_ms);
    CHECK(tl.start_ms[path.front().task] == 0);
    for (std::size_t i = 1; i < path.size(); ++i) CHECK(tl.start_ms[path[i].task] == tl.end_ms[path[i - 1].task]);
    // Same input, same output, bit for bit.
    const sim::Timeline again = sim::simulate(g);
    CHECK(again.start_ms == tl.start_ms);
    CHECK(again.end_ms == tl.end_ms);
  }
}

TEST_CASE("sim::simulate gives rank 0 the same times in symmetric and multi-rank modes", "[sim][property]") {
  for (std::uint32_t seed = 1; seed <= 30; ++seed) {
    sim::RandomDagOptions one;
    one.seed = seed;
    one.logical_tasks = 80;
    one.priority_comm = seed % 2 == 1;
    sim::RandomDagOptions many = one;
    many.ranks = 4;
    const dag::TaskGraph g1 = sim::random_dag(one);
    const dag::TaskGraph g4 = sim::random_dag(many);
    const sim::Timeline t1 = sim::simulate(g1);
    const sim::Timeline t4 = sim::simulate(g4);
    INFO("seed " << seed);
    CHECK(t1.makespan_ms == t4.makespan_ms);
    bool same = true;
    for (std::size_t i = 0; i < one.logical_tasks; ++i) {
      const dag::TaskId a = sim::random_dag_rank0_task(one, i);
      const dag::TaskId b = sim::random_dag_rank0_task(many, i);
      same = same && t1.start_ms[a] == t4.start_ms[b] && t1.end_ms[a] == t4.end_ms[b];
    }
    CHECK(same);
  }
}

TEST_CASE("sim::simulate follows the slowest rank when one rank is slowed", "[sim][property]") {
  sim::PipelineDagOptions o;
  o.ranks = 8;
  o.layers = 2;
  o.micro_batches = 4;
  o.group_size = 8;
  const dag::TaskGraph g = sim::pipeline_dag(o);
  const double base = sim::simulate(g).makespan_ms;
  sim::EngineOptions slow;
  slow.rank_compute_slowdown.assign(8, 1.0);
  slow.rank_compute_slowdown[5] = 1.5;
  const sim::Timeline s = sim::simulate(g, slow);
  CHECK(s.makespan_ms > base);
  // Every rank waits at the shared collectives, so all ranks end together.
  const sim::Summary summary = sim::summarize(g, s);
  for (const auto& r : summary.ranks) CHECK(r.end_ms == s.makespan_ms);
}
