#include <catch2/catch.hpp>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/sched/work_shapes.hpp>

using namespace moeplan;

TEST_CASE("sched::gemm_work rounds, merges and takes the gradients of the cost model's GEMMs", "[sched]") {
  SECTION("forward: whole rows, at least 1; equal neighbours one batch") {
    // [10.4 x 8] x [8 x 16] twice (SwiGLU's gate and up) then [10.4 x 16] x [16 x 8]:
    // 10 rows; the first two merge into a batch of 2.
    const dag::WorkShape w = sched::gemm_work({{10.4, 16, 8, 1, 2}, {10.4, 16, 8, 1, 2}, {10.4, 8, 16, 1, 2}}, false);
    CHECK(w.gemms == std::vector<dag::GemmBatch>{{10, 16, 8, 2}, {10, 8, 16, 1}});
    CHECK_FALSE(w.attention);
    // A fraction of a row still runs one; a batch of none is no GEMM.
    CHECK(sched::gemm_work({{0.3, 4, 4, 3, 2}, {5, 4, 4, 0, 2}}, false).gemms ==
          std::vector<dag::GemmBatch>{{1, 4, 4, 3}});
  }
  SECTION("backward: per GEMM (m, n, k), the input gradient (m, k, n) and the weight gradient (k, n, m)") {
    // [6 x 4] x [4 x 2]: dA = dC [6 x 2] B^T [2 x 4]; dB = A^T [4 x 6] dC [6 x 2]: 2 x 2 x 6 x 4 x 2 FLOPs.
    const dag::WorkShape w = sched::gemm_work({{6, 2, 4, 5, 2}}, true);
    CHECK(w.gemms == std::vector<dag::GemmBatch>{{6, 4, 2, 5}, {4, 2, 6, 5}});
    CHECK(dag::gemm_flops(w.gemms[0]) + dag::gemm_flops(w.gemms[1]) == 2 * (2.0 * 6 * 2 * 4 * 5));
  }
  SECTION("the router: [tokens x d_model] x [d_model x E]") {
    model::ModelSpec m;
    m.d_model = 32;
    m.moe.num_experts = 4;
    m.dtype_bytes = 2;
    // 2 t d E = 2 x 7 x 32 x 4 = 1792 FLOPs (cost::moe_layer_sizes' gating_forward_flops).
    const dag::WorkShape w = sched::router_work(m, 7, false);
    CHECK(w.gemms == std::vector<dag::GemmBatch>{{7, 4, 32, 1}});
    CHECK(dag::gemm_flops(w.gemms[0]) == 1792);
  }
}

TEST_CASE("dag::TaskGraph keeps recorded work beside its records, each distinct shape once", "[sched][dag]") {
  // Three tasks: a and c with one shape, b without: 3 indices of 4 bytes and one shape.
  auto build = [](bool record) {
    dag::TaskGraphBuilder b;
    const dag::ResourceId r = b.add_resource({"compute", 0, dag::DispatchPolicy::InOrder});
    const dag::WorkShape shape{{{2, 3, 4, 1}}, dag::AttentionCore{8, 8, 1, 4}};
    for (const char* name : {"a", "b", "c"}) {
      dag::TaskSpec s;
      s.name = name;
      s.duration_ms = 1;
      s.resources = {r};
      if (record && name[0] != 'b') s.work = &shape;
      b.add_task(s);
    }
    return std::move(b).build();
  };
  const dag::TaskGraph plain = build(false), recorded = build(true);
  CHECK(plain.work(0) == nullptr);
  REQUIRE(recorded.work(0) != nullptr);
  CHECK(recorded.work(1) == nullptr);
  CHECK(recorded.work(2) == recorded.work(0));  // one copy
  CHECK(recorded.work(0)->gemms == std::vector<dag::GemmBatch>{{2, 3, 4, 1}});
  CHECK(recorded.memory_bytes() == plain.memory_bytes() + 3 * 4 + sizeof(dag::WorkShape) + sizeof(dag::GemmBatch));
}
