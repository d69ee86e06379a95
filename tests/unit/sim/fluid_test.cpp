// Rates that change while a task runs (issue 15 items 1, 2 and 5): compute
// slowed by communication beside it, transfers sharing links max-min fairly,
// seeded noise on compute work. Every expected time is derived by hand in the
// comments, interval by interval.

#include <catch2/catch.hpp>

#include <cmath>

#include <moeplan/core/error.hpp>
#include <moeplan/sim/analysis.hpp>
#include <moeplan/sim/engine.hpp>
#include <moeplan/sim/synthetic_dag.hpp>

using namespace moeplan;
using dag::DispatchPolicy;
using dag::TaskKind;

namespace {

struct FluidDag {
  dag::TaskGraphBuilder b;
  dag::ResourceId stream(const char* name, std::int32_t rank = 0) {
    return b.add_resource({name, rank, DispatchPolicy::InOrder, 0});
  }
  dag::ResourceId link(const char* name, double capacity, std::int32_t rank = 0) {
    return b.add_resource({name, rank, DispatchPolicy::Shared, capacity});
  }
  dag::TaskId compute(const char* name, double ms, std::vector<dag::ResourceId> on,
                      std::vector<dag::TaskId> after = {}) {
    return add(name, TaskKind::Compute, ms, 0, 0, std::move(on), std::move(after));
  }
  dag::TaskId comm(const char* name, double ms, std::vector<dag::ResourceId> on, std::vector<dag::TaskId> after = {}) {
    return add(name, TaskKind::Communication, ms, 0, 0, std::move(on), std::move(after));
  }
  // A transfer of `size` units: `latency_ms` of startup, then streaming at up
  // to size / (ms - latency_ms) units per ms.
  dag::TaskId transfer(const char* name, double size, double ms, double latency_ms, std::vector<dag::ResourceId> on,
                       std::vector<dag::TaskId> after = {}) {
    return add(name, TaskKind::Communication, ms, latency_ms, size, std::move(on), std::move(after));
  }
  dag::TaskId add(const char* name, TaskKind kind, double ms, double latency_ms, double size,
                  std::vector<dag::ResourceId> on, std::vector<dag::TaskId> after) {
    dag::TaskSpec s;
    s.name = name;
    s.kind = kind;
    s.duration_ms = ms;
    s.latency_ms = latency_ms;
    s.size = size;
    s.resources = std::move(on);
    const dag::TaskId id = b.add_task(s);
    for (dag::TaskId d : after) b.add_dependency(d, id);
    return id;
  }
};

sim::Timeline run(const dag::TaskGraph& g, double slowdown) {
  sim::EngineOptions o;
  o.overlap_compute_slowdown = slowdown;
  return sim::simulate(g, o);
}

}  // namespace

TEST_CASE("sim: a GEMM overlapped by an AlltoAll for part of its length slows only there", "[sim][fluid]") {
  // Rank 1 computes `pre` 0-2; then rank 0's AlltoAll runs 2-6 (communication
  // is not slowed). Rank 0's GEMM of 10 ms starts at 0. With slowdown 1.25 its
  // rate is 1 on 0-2 (work 2), 1/1.25 = 0.8 on 2-6 (work 3.2), then 1 again for
  // the remaining 10 - 2 - 3.2 = 4.8: it ends at 6 + 4.8 = 10.8.
  FluidDag d;
  const auto compute0 = d.stream("compute", 0);
  const auto comm0 = d.stream("comm", 0);
  const auto compute1 = d.stream("compute", 1);
  const auto gemm = d.compute("gemm", 10, {compute0});
  const auto pre = d.compute("pre", 2, {compute1});
  const auto a2a = d.comm("a2a", 4, {comm0}, {pre});
  const dag::TaskGraph g = std::move(d.b).build();

  const sim::Timeline slow = run(g, 1.25);
  CHECK(slow.start_ms[a2a] == 2);
  CHECK(slow.end_ms[a2a] == 6);
  CHECK(slow.end_ms[pre] == 2);  // rank 1 runs no communication: full speed
  CHECK(slow.end_ms[gemm] == Approx(10.8).epsilon(1e-12));
  CHECK(slow.makespan_ms == Approx(10.8).epsilon(1e-12));
  CHECK(slow.retimed_events == 2);  // the GEMM's end moved when the AlltoAll started and when it ended

  const sim::Timeline free_overlap = run(g, 1.0);  // today's engine: overlap is free
  CHECK(free_overlap.end_ms[gemm] == 10);
  CHECK(free_overlap.retimed_events == 0);
}

TEST_CASE("sim: compute that starts under a running collective is slowed on every member rank", "[sim][fluid]") {
  // A collective over ranks 0 and 1 runs 0-3. Each rank's 5 ms GEMM starts at 0
  // at rate 1/1.25 = 0.8: by 3 it has done 2.4, the remaining 2.6 run at rate 1:
  // it ends at 5.6. Rank 2 holds no member: its GEMM ends at 5.
  FluidDag d;
  const auto c0 = d.stream("compute", 0), c1 = d.stream("compute", 1), c2 = d.stream("compute", 2);
  const auto m0 = d.stream("comm", 0), m1 = d.stream("comm", 1);
  d.comm("allreduce", 3, {m0, m1});
  const auto g0 = d.compute("gemm0", 5, {c0});
  const auto g1 = d.compute("gemm1", 5, {c1});
  const auto g2 = d.compute("gemm2", 5, {c2});
  const dag::TaskGraph g = std::move(d.b).build();
  const sim::Timeline tl = run(g, 1.25);
  CHECK(tl.end_ms[g0] == Approx(5.6).epsilon(1e-12));
  CHECK(tl.end_ms[g1] == Approx(5.6).epsilon(1e-12));
  CHECK(tl.end_ms[g2] == 5);
}

TEST_CASE("sim: a compute task's end is its start plus the integral of its rate over several changes",
          "[sim][fluid]") {
  // Rank 0's comm stream runs c1 on 1-2 and c2 on 4-7 (each after a compute
  // task of rank 1 ending at 1 and 4). A 9 ms GEMM on rank 0 from 0, slowdown 2
  // (rate 0.5 under communication):
  //   0-1 rate 1 -> 1; 1-2 rate 0.5 -> 0.5; 2-4 rate 1 -> 2 (3.5 done);
  //   4-7 rate 0.5 -> 1.5 (5 done); the remaining 4 at rate 1 -> ends at 11.
  FluidDag d;
  const auto c0 = d.stream("compute", 0), m0 = d.stream("comm", 0), c1 = d.stream("compute", 1);
  const auto gemm = d.compute("gemm", 9, {c0});
  const auto w1 = d.compute("w1", 1, {c1});
  const auto w2 = d.compute("w2", 3, {c1}, {w1});
  d.comm("c1", 1, {m0}, {w1});
  d.comm("c2", 3, {m0}, {w2});
  const dag::TaskGraph g = std::move(d.b).build();
  const sim::Timeline tl = run(g, 2.0);
  CHECK(tl.end_ms[gemm] == Approx(11.0).epsilon(1e-12));
  // Integral of the rate from start to end: 1 + 0.5 + 2 + 1.5 + 4 = 9, the GEMM's work.
}

TEST_CASE("sim: two transfers sharing a link that start at different times split it", "[sim][fluid]") {
  // Link of 100 units/ms. T1: 400 units, 4 ms alone (max rate 100), from 0.
  // T2: 200 units, 2 ms alone (max rate 100), after a 1 ms compute task.
  // 0-1: T1 alone at 100 -> 300 left. From 1 each gets 50: T2's 200 take 4 ms,
  // so T2 ends at 5, when T1 has 300 - 200 = 100 left; alone again at 100, T1
  // ends at 6. The link moved 600 units in 6 ms: always full.
  FluidDag d;
  const auto link = d.link("nic", 100);
  const auto c = d.stream("compute");
  const auto t1 = d.transfer("t1", 400, 4, 0, {link});
  const auto pre = d.compute("pre", 1, {c});
  const auto t2 = d.transfer("t2", 200, 2, 0, {link}, {pre});
  const dag::TaskGraph g = std::move(d.b).build();
  const sim::Timeline tl = run(g, 1.0);
  CHECK(tl.start_ms[t2] == 1);
  CHECK(tl.end_ms[t2] == Approx(5.0).epsilon(1e-12));
  CHECK(tl.end_ms[t1] == Approx(6.0).epsilon(1e-12));
  const sim::Summary summary = sim::summarize(g, tl);
  CHECK(summary.resources[link].busy_ms == Approx(6.0).epsilon(1e-12));  // the union, not 6 + 4

  SECTION("each transfer's latency is paid once and uses no bandwidth") {
    // T2 gets 0.5 ms of latency (2.5 ms alone: max rate still 200 / 2 = 100):
    // it streams from 1.5. T1 alone until 1.5 -> 250 left. From 1.5 each gets
    // 50: T2's 200 end at 5.5, T1 has 50 left, alone at 100: ends at 6.0.
    FluidDag e;
    const auto l2 = e.link("nic", 100);
    const auto c2 = e.stream("compute");
    const auto u1 = e.transfer("t1", 400, 4, 0, {l2});
    const auto p2 = e.compute("pre", 1, {c2});
    const auto u2 = e.transfer("t2", 200, 2.5, 0.5, {l2}, {p2});
    const dag::TaskGraph h = std::move(e.b).build();
    const sim::Timeline tl2 = run(h, 1.0);
    CHECK(tl2.end_ms[u2] == Approx(5.5).epsilon(1e-12));
    CHECK(tl2.end_ms[u1] == Approx(6.0).epsilon(1e-12));
  }
}

TEST_CASE("sim: transfers crossing shared links of different capacities get max-min fair rates", "[sim][fluid]") {
  // NIC: 100 units/ms, switch: 150. F1 crosses both, F2 the switch only, F3 the
  // NIC only; each alone could go 1000+ units/ms (size / 0.1 ms), so the links
  // decide. Progressive filling: raise all three together; the NIC fills first
  // at 100 / 2 = 50 (the switch would allow 150 / 2 = 75), freezing F1 = F3 = 50;
  // the switch has 150 - 50 = 100 left for F2 alone: F2 = 100.
  // Sizes F1 100, F2 300, F3 200: F1 ends at 100 / 50 = 2. Then F2 has 100
  // left and F3 100. Alone on the switch F2 gets 150: ends at 2 + 100/150 =
  // 2.6667; alone on the NIC F3 gets 100: ends at 3.
  FluidDag d;
  const auto nic = d.link("nic", 100);
  const auto sw = d.link("switch", 150);
  const auto f1 = d.transfer("f1", 100, 0.1, 0, {nic, sw});
  const auto f2 = d.transfer("f2", 300, 0.1, 0, {sw});
  const auto f3 = d.transfer("f3", 200, 0.1, 0, {nic});
  const dag::TaskGraph g = std::move(d.b).build();
  const sim::Timeline tl = run(g, 1.0);
  CHECK(tl.end_ms[f1] == Approx(2.0).epsilon(1e-12));
  CHECK(tl.end_ms[f2] == Approx(2.0 + 100.0 / 150.0).epsilon(1e-12));
  CHECK(tl.end_ms[f3] == Approx(3.0).epsilon(1e-12));

  SECTION("a transfer slower than its share keeps its own rate and leaves the rest to the others") {
    // Switch of 150 with F4 (max rate 30: 30 units in 1 ms) and F5 (300 units,
    // max rate 3000). Filling stops F4 at its 30; F5 gets 150 - 30 = 120 until F4
    // ends at 1 (120 done), then 150 for the remaining 180: ends at 1 + 1.2 = 2.2.
    FluidDag e;
    const auto s2 = e.link("switch", 150);
    const auto f4 = e.transfer("f4", 30, 1, 0, {s2});
    const auto f5 = e.transfer("f5", 300, 0.1, 0, {s2});
    const dag::TaskGraph h = std::move(e.b).build();
    const sim::Timeline tl2 = run(h, 1.0);
    CHECK(tl2.end_ms[f4] == Approx(1.0).epsilon(1e-12));
    CHECK(tl2.end_ms[f5] == Approx(2.2).epsilon(1e-12));
  }
}

TEST_CASE("sim: a transfer alone on a link fast enough for it takes exactly its priced time", "[sim][fluid]") {
  // 256 units in 3 ms with 1 ms latency: streams 256 at 128/ms for 2 ms after
  // the latency; the link (1000/ms) never binds: 0-3, as on an in-order stream.
  FluidDag d;
  const auto link = d.link("nic", 1000);
  const auto t = d.transfer("t", 256, 3, 1, {link});
  const dag::TaskGraph g = std::move(d.b).build();
  CHECK(run(g, 1.0).end_ms[t] == Approx(3.0).epsilon(1e-12));
}

TEST_CASE("sim: shared links and latencies are validated when the graph is built", "[sim][fluid]") {
  SECTION("a shared resource needs a positive capacity") {
    FluidDag d;
    const auto link = d.link("nic", 0);
    d.transfer("t", 1, 1, 0, {link});
    CHECK_THROWS_WITH(std::move(d.b).build(), Catch::Contains("capacity 0"));
  }
  SECTION("latency beyond the duration") {
    FluidDag d;
    const auto s = d.stream("comm");
    d.transfer("t", 1, 1, 2, {s});
    CHECK_THROWS_WITH(std::move(d.b).build(), Catch::Contains("latency 2"));
  }
  SECTION("a transfer that streams needs a size") {
    FluidDag d;
    const auto link = d.link("nic", 10);
    d.transfer("t", 0, 1, 0, {link});
    CHECK_THROWS_WITH(std::move(d.b).build(), Catch::Contains("needs a size"));
  }
  SECTION("a slowdown below 1 is refused by the engine") {
    FluidDag d;
    d.compute("a", 1, {d.stream("compute")});
    const dag::TaskGraph g = std::move(d.b).build();
    CHECK_THROWS_WITH(run(g, 0.5), Catch::Contains("must be finite and >= 1"));
  }
}

TEST_CASE("sim: overlap slowdown keeps an in-order run between the free and the fully slowed one", "[sim][fluid]") {
  // Second formulation: with fixed issue orders and no priority pools, end
  // times grow with durations (every start is a max of earlier ends). The
  // slowed run realises compute durations between d and s*d, so its makespan
  // lies between the free run's and that of a run with every compute task
  // stretched by s and communication as is, which itself is at most s times the free makespan.
  const double s = 1.3;
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    sim::RandomDagOptions o;
    o.seed = seed;
    o.logical_tasks = 300;
    o.ranks = 1 + static_cast<std::int32_t>(seed % 3);
    const dag::TaskGraph g = sim::random_dag(o);
    const double free_ms = run(g, 1.0).makespan_ms;
    const double slowed_ms = run(g, s).makespan_ms;
    // All compute stretched: the same as every rank being a straggler of factor s.
    sim::EngineOptions all;
    all.rank_compute_slowdown.assign(static_cast<std::size_t>(o.ranks), s);
    const double stretched_ms = sim::simulate(g, all).makespan_ms;
    INFO("seed " << seed);
    CHECK(slowed_ms >= free_ms * (1 - 1e-12));
    CHECK(slowed_ms <= stretched_ms * (1 + 1e-12));
    CHECK(stretched_ms <= s * free_ms * (1 + 1e-12));
  }
}

TEST_CASE("sim: repeated runs with changing rates give the same timeline bit for bit", "[sim][fluid]") {
  sim::RandomDagOptions o;
  o.seed = 7;
  o.logical_tasks = 2000;
  o.ranks = 4;
  o.priority_comm = true;
  const dag::TaskGraph g = sim::random_dag(o);
  sim::EngineOptions opts;
  opts.overlap_compute_slowdown = 1.38;  // Echo's mean (arXiv 2412.12487)
  opts.compute_jitter_cv = 0.1;
  const sim::Timeline a = sim::simulate(g, opts);
  const sim::Timeline b = sim::simulate(g, opts);
  CHECK(a.start_ms == b.start_ms);
  CHECK(a.end_ms == b.end_ms);
  CHECK(a.start_order == b.start_order);
}

TEST_CASE("sim: compute jitter is lognormal with mean 1 and the asked coefficient of variation", "[sim][fluid]") {
  // 20,000 draws, cv 0.2: the sample mean's standard error is 0.2 / sqrt(20000)
  // = 0.0014, so |mean - 1| < 0.006 holds at over 4 standard errors. The sample
  // cv of a lognormal with sigma^2 = ln(1.04) converges more slowly (heavy right
  // tail); 5% relative is about 5 standard errors at this n.
  const std::size_t n = 20000;
  const double cv = 0.2;
  double sum = 0, sum_sq = 0;
  bool positive = true;
  for (dag::TaskId t = 0; t < n; ++t) {
    const double f = sim::compute_jitter_factor(42, t, cv);
    positive = positive && f > 0;
    sum += f;
    sum_sq += f * f;
  }
  const double mean = sum / static_cast<double>(n);
  const double sd = std::sqrt(sum_sq / static_cast<double>(n) - mean * mean);
  CHECK(positive);
  CHECK(std::abs(mean - 1.0) < 0.006);
  CHECK(sd / mean == Approx(cv).epsilon(0.05));
  CHECK(sim::compute_jitter_factor(42, 5, cv) == sim::compute_jitter_factor(42, 5, cv));
  CHECK(sim::compute_jitter_factor(42, 5, cv) != sim::compute_jitter_factor(43, 5, cv));
  CHECK(sim::compute_jitter_factor(42, 5, 0.0) == 1.0);
}

TEST_CASE("sim: jitter multiplies each compute task's work and leaves communication alone", "[sim][fluid]") {
  // A chain a(2) -> m(3, communication) -> b(4): the makespan is
  // 2 f_a + 3 + 4 f_b with f the seeded factors of tasks a (id 0) and b (id 2).
  FluidDag d;
  const auto c = d.stream("compute"), m = d.stream("comm");
  const auto a = d.compute("a", 2, {c});
  const auto x = d.comm("m", 3, {m}, {a});
  const auto b = d.compute("b", 4, {c}, {x});
  const dag::TaskGraph g = std::move(d.b).build();
  sim::EngineOptions o;
  o.compute_jitter_cv = 0.3;
  o.jitter_seed = 9;
  const sim::Timeline tl = sim::simulate(g, o);
  const double fa = sim::compute_jitter_factor(9, a, 0.3), fb = sim::compute_jitter_factor(9, b, 0.3);
  CHECK(fa != 1.0);
  CHECK(tl.end_ms[x] - tl.start_ms[x] == Approx(3.0).epsilon(1e-12));
  CHECK(tl.makespan_ms == Approx(2 * fa + 3 + 4 * fb).epsilon(1e-12));
}

TEST_CASE("sim: a transfer that is all latency takes its time and no bandwidth", "[sim][fluid]") {
  // T1 (1 ms, all latency, no size) and T2 (100 units at up to 100/ms: 1 ms)
  // on a 100/ms link from 0: T1 never streams, so T2 has the link alone: both end at 1.
  FluidDag d;
  const auto link = d.link("nic", 100);
  const auto t1 = d.transfer("t1", 0, 1, 1, {link});
  const auto t2 = d.transfer("t2", 100, 1, 0, {link});
  const dag::TaskGraph g = std::move(d.b).build();
  const sim::Timeline tl = run(g, 1.0);
  CHECK(tl.end_ms[t1] == 1);
  CHECK(tl.end_ms[t2] == Approx(1.0).epsilon(1e-12));
}

namespace {
sim::Timeline run_both(const dag::TaskGraph& g, double compute_slowdown, double comm_slowdown) {
  sim::EngineOptions o;
  o.overlap_compute_slowdown = compute_slowdown;
  o.overlap_comm_slowdown = comm_slowdown;
  return sim::simulate(g, o);
}
}  // namespace

TEST_CASE("sim: communication slowed beside compute, alone and together with the compute slow-down",
          "[sim][fluid]") {
  // Rank 0: GEMM A (4 ms of work) on compute, AlltoAll B (6 ms) on comm, both at 0.
  FluidDag d;
  const auto compute0 = d.stream("compute", 0);
  const auto comm0 = d.stream("comm", 0);
  const auto a = d.compute("A", 4, {compute0});
  const auto b = d.comm("B", 6, {comm0});
  const dag::TaskGraph g = std::move(d.b).build();
  SECTION("comm slow-down 2 only") {
    // B runs at 1/2 while A runs (0-4): 2 ms of its work; the other 4 at full rate: ends at 8.
    // A is not slowed (compute slow-down 1): ends at 4.
    const sim::Timeline t = run_both(g, 1.0, 2.0);
    CHECK(t.end_ms[a] == 4);
    CHECK(t.end_ms[b] == Approx(8.0).epsilon(1e-12));
    CHECK(t.retimed_events == 1);  // B's end moved once, when A ended
  }
  SECTION("both: compute 1.25, comm 2") {
    // A at 1/1.25 = 0.8 while B runs: 4 / 0.8 = 5, and B still runs at 5: A ends at 5.
    // B at 0.5 on 0-5: 2.5 of work; 3.5 left at full rate: ends at 8.5.
    const sim::Timeline t = run_both(g, 1.25, 2.0);
    CHECK(t.end_ms[a] == Approx(5.0).epsilon(1e-12));
    CHECK(t.end_ms[b] == Approx(8.5).epsilon(1e-12));
  }
  SECTION("slow-down 1 is today's free overlap, bit for bit") {
    const sim::Timeline t = run_both(g, 1.0, 1.0);
    CHECK(t.end_ms[a] == 4);
    CHECK(t.end_ms[b] == 6);
  }
}

TEST_CASE("sim: a collective slowed by compute on one member rank moves at that member's pace", "[sim][fluid]") {
  // A collective C (3 ms) over ranks 0 and 1 from 0; rank 1 computes G (1 ms) from 0, rank 0 nothing.
  // With comm slow-down 3: C's rate is 1/3 on 0-1 (1/3 ms of work), then 1 for the remaining 8/3:
  // C ends at 1 + 8/3 = 11/3.
  FluidDag d;
  const auto comm0 = d.stream("comm", 0);
  const auto comm1 = d.stream("comm", 1);
  const auto compute1 = d.stream("compute", 1);
  const auto c = d.comm("C", 3, {comm0, comm1});
  const auto gemm = d.compute("G", 1, {compute1});
  const dag::TaskGraph g = std::move(d.b).build();
  const sim::Timeline t = run_both(g, 1.0, 3.0);
  CHECK(t.end_ms[gemm] == 1);
  CHECK(t.end_ms[c] == Approx(11.0 / 3.0).epsilon(1e-12));
}

TEST_CASE("sim: an overlap_comm_slowdown below 1 or not finite is refused", "[sim][fluid]") {
  FluidDag d;
  const auto comm0 = d.stream("comm", 0);
  d.comm("B", 1, {comm0});
  const dag::TaskGraph g = std::move(d.b).build();
  CHECK_THROWS_WITH(run_both(g, 1.0, 0.5), Catch::Contains("overlap_comm_slowdown") || Catch::Contains(">= 1"));
  CHECK_THROWS(run_both(g, 1.0, std::nan("")));
}
