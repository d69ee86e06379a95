#include <catch2/catch.hpp>

#include <algorithm>

#include <moeplan/exec/backend.hpp>
#include <moeplan/exec/replay_plan.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/plan/scenario_run.hpp>

using namespace moeplan;

namespace {

// The rules the measured timeline must obey, read from the graph itself. No
// tolerance is needed: one steady_clock times every task, a task's end is read
// before its successors are released, and a successor's start after.
void check_order(const dag::TaskGraph& g, const sim::Timeline& tl) {
  REQUIRE(tl.start_ms.size() == g.size());
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    INFO("task " << t << " " << g.name(t));
    CHECK(tl.start_ms[t] >= 0);
    CHECK(tl.end_ms[t] >= tl.start_ms[t]);
    for (dag::TaskId s : boost::make_iterator_range(adjacent_vertices(t, g.successors_graph())))
      CHECK(tl.end_ms[t] <= tl.start_ms[s]);
  }
  std::vector<std::vector<dag::TaskId>> on(g.resources().size());
  for (dag::TaskId t = 0; t < g.size(); ++t)
    for (dag::ResourceId r : g.resources(t)) on[r].push_back(t);
  for (dag::ResourceId r = 0; r < on.size(); ++r) {
    const dag::DispatchPolicy policy = g.resources()[r].policy;
    if (policy == dag::DispatchPolicy::Shared) continue;
    std::vector<dag::TaskId> by_start = on[r];
    std::stable_sort(by_start.begin(), by_start.end(),
                     [&](dag::TaskId a, dag::TaskId b) { return tl.start_ms[a] < tl.start_ms[b]; });
    for (std::size_t i = 1; i < by_start.size(); ++i) {
      INFO("resource " << g.resources()[r].name << " of rank " << g.resources()[r].rank);
      // one task at a time (a collective holds every member until it ends)
      CHECK(tl.end_ms[by_start[i - 1]] <= tl.start_ms[by_start[i]]);
      if (policy == dag::DispatchPolicy::InOrder) CHECK(by_start[i - 1] < by_start[i]);  // issue order
    }
  }
}

dag::TaskSpec spec(const char* name, dag::TaskKind kind, model::OpClass op, std::vector<dag::ResourceId> on,
                   double size, std::int32_t priority = 0) {
  dag::TaskSpec s;
  s.name = name;
  s.kind = kind;
  s.op = op;
  s.size = size;
  s.duration_ms = 1;
  s.resources = std::move(on);
  s.group_size = static_cast<std::int32_t>(s.resources.size());
  s.priority = priority;
  return s;
}

exec::MeasuredRun run_host(const dag::TaskGraph& g, const exec::ReplayPlan& plan) {
  exec::ExecuteOptions o;
  o.warmup_iterations = 0;
  o.iterations = 1;
  return exec::make_backend("host")->run(g, plan, o);
}

}  // namespace

TEST_CASE("exec host backend: collectives taken in different orders on two streams do not deadlock", "[exec]") {
  // Ranks 0 and 1, each a compute stream and two in-order comm streams s and q.
  // A is a collective on the s streams, B on the q streams. Rank 0's B waits
  // for a GEMM on rank 0, rank 1's A for a GEMM on rank 1: rank 0 takes A
  // first, rank 1 takes B first, and both are in flight at once. Bytes
  // matched by arrival order instead of by task would pair A with B.
  dag::TaskGraphBuilder b;
  const dag::ResourceId c0 = b.add_resource({"compute", 0, dag::DispatchPolicy::InOrder});
  const dag::ResourceId s0 = b.add_resource({"s", 0, dag::DispatchPolicy::InOrder});
  const dag::ResourceId q0 = b.add_resource({"q", 0, dag::DispatchPolicy::InOrder});
  const dag::ResourceId c1 = b.add_resource({"compute", 1, dag::DispatchPolicy::InOrder});
  const dag::ResourceId s1 = b.add_resource({"s", 1, dag::DispatchPolicy::InOrder});
  const dag::ResourceId q1 = b.add_resource({"q", 1, dag::DispatchPolicy::InOrder});
  const double gemm = 2.0 * 64 * 64 * 64;
  const dag::TaskId g0 = b.add_task(spec("g0", dag::TaskKind::Compute, model::OpClass::Gemm, {c0}, gemm));
  const dag::TaskId g1 = b.add_task(spec("g1", dag::TaskKind::Compute, model::OpClass::Gemm, {c1}, gemm));
  const dag::TaskId a = b.add_task(spec("A", dag::TaskKind::Communication, model::OpClass::AllReduce, {s0, s1}, 1 << 16));
  const dag::TaskId bb = b.add_task(spec("B", dag::TaskKind::Communication, model::OpClass::A2A, {q0, q1}, 1 << 16));
  b.add_dependency(g1, a);
  b.add_dependency(g0, bb);
  const dag::TaskGraph g = std::move(b).build();
  exec::ReplayPlan plan;
  plan.ranks = 2;
  const dag::WorkShape gemm64{{{64, 64, 64, 1}}, std::nullopt};
  plan.tasks = {{gemm64},
                {gemm64},
                {exec::CommWork{model::OpClass::AllReduce, 1 << 16, {0, 1}}},
                {exec::CommWork{model::OpClass::A2A, 1 << 16, {0, 1}}}};
  const exec::MeasuredRun m = run_host(g, plan);
  REQUIRE(m.complete);
  check_order(g, m.timeline);
  CHECK(m.timeline.start_ms[a] >= m.timeline.end_ms[g1]);
  CHECK(m.timeline.start_ms[bb] >= m.timeline.end_ms[g0]);
  CHECK(m.iteration_ms.size() == 1);
  CHECK(m.timeline.makespan_ms == Approx(std::max(m.timeline.end_ms[a], m.timeline.end_ms[bb])));
}

TEST_CASE("exec host backend: priority pools and in-order heads follow the engine's rules", "[exec]") {
  // Rank 0: a Priority stream p with three GEMMs ready at once, priorities 1,
  // 3, 2 (issue order 0, 1, 2): they run 1, 2, 0. An InOrder stream o whose
  // head X waits for the last of them while Y behind it is ready at once: Y
  // starts after X ends.
  dag::TaskGraphBuilder b;
  const dag::ResourceId p = b.add_resource({"pool", 0, dag::DispatchPolicy::Priority});
  const dag::ResourceId o = b.add_resource({"ordered", 0, dag::DispatchPolicy::InOrder});
  const double gemm = 2.0 * 32 * 32 * 32;
  const dag::TaskId t0 = b.add_task(spec("p1", dag::TaskKind::Compute, model::OpClass::Gemm, {p}, gemm, 1));
  const dag::TaskId t1 = b.add_task(spec("p3", dag::TaskKind::Compute, model::OpClass::Gemm, {p}, gemm, 3));
  const dag::TaskId t2 = b.add_task(spec("p2", dag::TaskKind::Compute, model::OpClass::Gemm, {p}, gemm, 2));
  const dag::TaskId x = b.add_task(spec("X", dag::TaskKind::Compute, model::OpClass::Gemm, {o}, gemm));
  const dag::TaskId y = b.add_task(spec("Y", dag::TaskKind::Compute, model::OpClass::Gemm, {o}, gemm));
  b.add_dependency(t0, x);
  const dag::TaskGraph g = std::move(b).build();
  exec::ReplayPlan plan;
  for (int i = 0; i < 5; ++i) plan.tasks.push_back({dag::WorkShape{{{32, 32, 32, 1}}, std::nullopt}});
  const exec::MeasuredRun m = run_host(g, plan);
  const sim::Timeline& tl = m.timeline;
  check_order(g, tl);
  CHECK(tl.end_ms[t1] <= tl.start_ms[t2]);
  CHECK(tl.end_ms[t2] <= tl.start_ms[t0]);
  CHECK(tl.end_ms[t0] <= tl.start_ms[x]);
  CHECK(tl.end_ms[x] <= tl.start_ms[y]);
}

TEST_CASE("exec host backend replays a scaled-down bundled scenario in the graph's order", "[exec]") {
  // host-flowmoe-small with every rank in the graph, 2 layers of 64-token
  // sequences: a few milliseconds of work per iteration.
  const plan::ScenarioRun run(io::load_scenario("host-flowmoe-small", {{"schedule.mode", "multi_rank"},
                                                                      {"model.num_layers", "2"},
                                                                      {"workload.seq_len", "64"},
                                                                      {"workload.micro_batch_size", "2"}}));
  for (const char* schedule : {"none", "flowmoe"}) {
    INFO(schedule);
    const sched::BuiltSchedule built = run.build_for_replay(schedule);
    const exec::ReplayPlan plan = exec::make_replay_plan(built.graph);
    exec::ExecuteOptions o;
    o.warmup_iterations = 1;
    o.iterations = 3;
    const exec::MeasuredRun m = exec::make_backend("host")->run(built.graph, plan, o);
    REQUIRE(m.complete);
    CHECK(m.iteration_ms.size() == 3);
    // the reported timeline is the median iteration
    std::vector<double> sorted = m.iteration_ms;
    std::sort(sorted.begin(), sorted.end());
    CHECK(m.timeline.makespan_ms == sorted[1]);
    CHECK(std::none_of(m.proxied.begin(), m.proxied.end(), [](bool p) { return p; }));
    check_order(built.graph, m.timeline);
  }
}

TEST_CASE("exec host backend refuses what it cannot replay", "[exec]") {
  SECTION("a symmetric graph's collective over ranks it does not hold") {
    const plan::ScenarioRun run(io::load_scenario("host-flowmoe-small", {{"schedule.mode", "symmetric"}, {"model.num_layers", "1"}}));
    const sched::BuiltSchedule built = run.build_for_replay("none");
    const exec::ReplayPlan plan = exec::make_replay_plan(built.graph);
    CHECK_THROWS_WITH(run_host(built.graph, plan), Catch::Contains("multi_rank"));
  }
  SECTION("an unknown backend") { CHECK_THROWS_WITH(exec::make_backend("tpu"), Catch::Contains("host or cuda")); }
}
