// make_cuda_backend() (src/exec/cuda/cuda_backend.cu), built only with CUDA.
// Without a GPU it must refuse with a runtime Error; with one (the GPU
// machine) it replays a four-task graph and the measured times must obey the
// graph's dependencies and stream order, and the collective be proxied.

#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>

#include "cuda_backend.hpp"  // src/exec/cuda/: the factory (private header)

using namespace moeplan;

TEST_CASE("exec::make_cuda_backend replays a graph or refuses without a GPU", "[exec][gpu]") {
  // compute: a (GEMM), c (GEMM); comm: b (alltoall of 1 MiB over 2 ranks) after a; d (GEMM) after b and c.
  dag::TaskGraphBuilder b;
  const auto compute = b.add_resource({"compute", 0, dag::DispatchPolicy::InOrder});
  const auto comm = b.add_resource({"comm", 0, dag::DispatchPolicy::InOrder});
  auto task = [&](const char* name, dag::ResourceId on, dag::TaskKind kind) {
    dag::TaskSpec s;
    s.name = name;
    s.kind = kind;
    s.duration_ms = 1;
    s.resources = {on};
    return b.add_task(s);
  };
  const auto ta = task("a", compute, dag::TaskKind::Compute);
  const auto tb = task("b", comm, dag::TaskKind::Communication);
  const auto tc = task("c", compute, dag::TaskKind::Compute);
  const auto td = task("d", compute, dag::TaskKind::Compute);
  b.add_dependency(ta, tb);
  b.add_dependency(tb, td);
  b.add_dependency(tc, td);
  const dag::TaskGraph graph = std::move(b).build();
  exec::ReplayPlan plan;
  const dag::WorkShape gemm{{{1024, 1024, 1024, 1}}, std::nullopt};
  plan.tasks = {{gemm}, {exec::CommWork{model::OpClass::A2A, 1048576.0, {0, 1}}}, {gemm}, {gemm}};
  exec::ExecuteOptions options;
  options.warmup_iterations = 1;
  options.iterations = 3;

  const std::unique_ptr<exec::Backend> backend = exec::make_cuda_backend();
  CHECK(std::string(backend->name()) == "cuda");
  exec::MeasuredRun run;
  try {
    run = backend->run(graph, plan, options);
  } catch (const Error& e) {
    // No GPU here (CI): a runtime error that says so, nothing else.
    CHECK(e.kind() == ErrorKind::Runtime);
    CHECK_THAT(e.what(), Catch::Contains("no CUDA GPU found"));
    return;
  }
  REQUIRE(run.iteration_ms.size() == 3);
  const sim::Timeline& t = run.timeline;
  REQUIRE(t.start_ms.size() == 4);
  CHECK(t.start_ms[tb] >= t.end_ms[ta]);  // dependency a -> b across streams
  CHECK(t.start_ms[tc] >= t.end_ms[ta]);  // stream order on compute
  CHECK(t.start_ms[td] >= t.end_ms[tb]);
  CHECK(t.start_ms[td] >= t.end_ms[tc]);
  for (dag::TaskId i = 0; i < 4; ++i) CHECK(t.end_ms[i] > t.start_ms[i]);
  CHECK(run.proxied == std::vector<bool>{false, true, false, false});
  CHECK_FALSE(run.proxy_note.empty());
}
