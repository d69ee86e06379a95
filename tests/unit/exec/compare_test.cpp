#include <catch2/catch.hpp>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/exec/compare.hpp>

using namespace moeplan;

TEST_CASE("exec::percentile: nearest rank, median of the two middle values", "[exec]") {
  // 1..20: p95 is the value at rank ceil(0.95 x 20) = 19; the median (10 + 11) / 2.
  std::vector<double> v;
  for (int i = 20; i >= 1; --i) v.push_back(i);
  CHECK(exec::percentile(v, 95) == 19);
  CHECK(exec::percentile(v, 50) == 10.5);
  CHECK(exec::percentile({3, 1, 2}, 50) == 2);
  CHECK(exec::percentile({7}, 95) == 7);
}

TEST_CASE("exec::compare: per op class, iteration and exposed communication by hand", "[exec]") {
  // One rank: compute stream c, comm stream m. Tasks: 0 gemm, 1 gemm, 2 a2a, 3 attention.
  dag::TaskGraphBuilder b;
  const dag::ResourceId c = b.add_resource({"compute", 0, dag::DispatchPolicy::InOrder});
  const dag::ResourceId m = b.add_resource({"comm", 0, dag::DispatchPolicy::InOrder});
  auto task = [&](dag::TaskKind kind, model::OpClass op, dag::ResourceId r) {
    dag::TaskSpec s;
    s.name = "t";
    s.kind = kind;
    s.op = op;
    s.duration_ms = 1;
    s.size = 1;
    s.resources = {r};
    return b.add_task(s);
  };
  task(dag::TaskKind::Compute, model::OpClass::Gemm, c);
  task(dag::TaskKind::Compute, model::OpClass::Gemm, c);
  task(dag::TaskKind::Communication, model::OpClass::A2A, m);
  task(dag::TaskKind::Compute, model::OpClass::Attention, c);
  const dag::TaskGraph g = std::move(b).build();
  sim::Timeline simulated, measured;
  simulated.start_ms = {0, 2, 2, 5};
  simulated.end_ms = {2, 4, 5, 6};
  simulated.makespan_ms = 6;
  measured.start_ms = {0, 3, 3, 7};
  measured.end_ms = {3, 5, 7, 8};
  measured.makespan_ms = 8;
  for (sim::Timeline* tl : {&simulated, &measured}) tl->start_order = {0, 1, 2, 3};
  const exec::Comparison r = exec::compare(g, simulated, measured);
  REQUIRE(r.ops.size() == 3);  // gemm, attention, a2a in OpClass order
  // gemm: simulated {2, 2}: median 2, p95 2; measured {3, 2}: median 2.5, p95 (rank ceil(1.9) = 2) 3;
  // error 100 (2 - 2.5) / 2.5 = -20%.
  CHECK(r.ops[0].op == model::OpClass::Gemm);
  CHECK(r.ops[0].tasks == 2);
  CHECK(r.ops[0].simulated_median_ms == Approx(2));
  CHECK(r.ops[0].simulated_p95_ms == Approx(2));
  CHECK(r.ops[0].measured_median_ms == Approx(2.5));
  CHECK(r.ops[0].measured_p95_ms == Approx(3));
  CHECK(r.ops[0].error_pct == Approx(-20));
  // attention: 1 ms both: 0%.
  CHECK(r.ops[1].op == model::OpClass::Attention);
  CHECK(r.ops[1].error_pct == Approx(0).margin(1e-12));
  // a2a: 3 ms simulated, 4 measured: -25%.
  CHECK(r.ops[2].op == model::OpClass::A2A);
  CHECK(r.ops[2].error_pct == Approx(-25));
  // Iteration 6 vs 8 ms: 100 (6 - 8) / 8 = -25%.
  CHECK(r.simulated_iteration_ms == 6);
  CHECK(r.measured_iteration_ms == 8);
  CHECK(r.iteration_error_pct == Approx(-25));
  // Exposed communication: simulated comm [2, 5] under compute [0, 4] u [5, 6]: [4, 5] = 1 ms;
  // measured comm [3, 7] under compute [0, 5] u [7, 8]: [5, 7] = 2 ms.
  CHECK(r.simulated_exposed_comm_ms == Approx(1));
  CHECK(r.measured_exposed_comm_ms == Approx(2));
}

TEST_CASE("exec::compare refuses a timeline that does not cover the graph", "[exec]") {
  dag::TaskGraphBuilder b;
  const dag::ResourceId c = b.add_resource({"compute", 0, dag::DispatchPolicy::InOrder});
  dag::TaskSpec s;
  s.name = "t";
  s.duration_ms = 1;
  s.resources = {c};
  b.add_task(s);
  const dag::TaskGraph g = std::move(b).build();
  sim::Timeline ok, empty;
  ok.start_ms = {0};
  ok.end_ms = {1};
  ok.start_order = {0};
  ok.makespan_ms = 1;
  CHECK_THROWS_WITH(exec::compare(g, ok, empty), Catch::Contains("measured timeline has 0 tasks"));
}
