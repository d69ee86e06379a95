// The CUDA backend's launch order and proxy bytes (src/exec/cuda/issue_plan.hpp):
// plain C++, tested on every machine. Expected orders are worked out by hand
// from the rule in issue_plan.hpp, in each section's comment.

#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>

#include "issue_plan.hpp"

using namespace moeplan;
using dag::DispatchPolicy;
using exec::cuda_plan::IssuePlan;

namespace {

struct Dag {
  dag::TaskGraphBuilder b;
  dag::ResourceId resource(const char* name, std::int32_t rank = 0, DispatchPolicy p = DispatchPolicy::InOrder) {
    return b.add_resource({name, rank, p});
  }
  dag::TaskId task(const char* name, std::vector<dag::ResourceId> on, std::vector<dag::TaskId> after = {},
                   std::int32_t priority = 0) {
    dag::TaskSpec s;
    s.name = name;
    s.duration_ms = 1;
    s.resources = std::move(on);
    s.priority = priority;
    const dag::TaskId id = b.add_task(s);
    for (dag::TaskId d : after) b.add_dependency(d, id);
    return id;
  }
};

std::vector<dag::TaskId> order(const IssuePlan& p) {
  std::vector<dag::TaskId> out;
  for (const auto& l : p.launches) out.push_back(l.task);
  return out;
}

}  // namespace

TEST_CASE("exec::cuda_plan: two in-order streams, dependencies become event waits", "[exec]") {
  // compute: a, c, d; comm: b. b after a, d after b. Issue: a (only head
  // ready); then b and c are both issuable, lowest id first: b; then c, d.
  // Waits only across streams: b waits a, d waits b; c none.
  Dag g;
  const auto compute = g.resource("compute");
  const auto comm = g.resource("comm");
  const auto a = g.task("a", {compute});
  const auto b = g.task("b", {comm}, {a});
  const auto c = g.task("c", {compute});
  const auto d = g.task("d", {compute}, {b, c});
  const dag::TaskGraph graph = std::move(g.b).build();
  const IssuePlan p = exec::cuda_plan::make_issue_plan(graph, 0);
  CHECK(p.streams == std::vector<dag::ResourceId>{compute, comm});
  REQUIRE(order(p) == std::vector<dag::TaskId>{a, b, c, d});
  CHECK(p.launches[0].waits.empty());
  CHECK(p.launches[1].stream == 1);
  CHECK(p.launches[1].waits == std::vector<dag::TaskId>{a});
  CHECK(p.launches[2].waits.empty());
  CHECK(p.launches[3].stream == 0);
  CHECK(p.launches[3].waits == std::vector<dag::TaskId>{b});  // c is on d's own stream: stream order suffices
}

TEST_CASE("exec::cuda_plan: a priority pool issues its highest-priority issuable task first", "[exec]") {
  // pool: low (priority 1), high (priority 9, after x on compute), mid (5).
  // Round 1: compute's head x (id 0) vs the pool's best issuable, mid (high
  // waits for x): x has the lower id. Round 2: the pool holds low, high, mid:
  // high, then mid, then low. The engine would start mid before high (high is
  // not ready until x ends): "issued" stands for "ended", the documented
  // approximation of an asynchronous launcher.
  Dag g;
  const auto compute = g.resource("compute");
  const auto pool = g.resource("comm", 0, DispatchPolicy::Priority);
  const auto x = g.task("x", {compute});
  const auto low = g.task("low", {pool}, {}, 1);
  const auto high = g.task("high", {pool}, {x}, 9);
  const auto mid = g.task("mid", {pool}, {}, 5);
  const dag::TaskGraph graph = std::move(g.b).build();
  const IssuePlan p = exec::cuda_plan::make_issue_plan(graph, 0);
  CHECK(order(p) == std::vector<dag::TaskId>{x, high, mid, low});
  CHECK(p.launches[1].waits == std::vector<dag::TaskId>{x});
}

TEST_CASE("exec::cuda_plan: only the rank's tasks, and other ranks' predecessors are not waited for", "[exec]") {
  // Rank 1 holds: y (after rank 0's w), the collective ar (both ranks), z.
  Dag g;
  const auto c0 = g.resource("compute", 0);
  const auto n0 = g.resource("comm", 0);
  const auto c1 = g.resource("compute", 1);
  const auto n1 = g.resource("comm", 1);
  const auto w = g.task("w", {c0});
  const auto y = g.task("y", {c1}, {w});
  const auto ar = g.task("ar", {n0, n1}, {w, y});
  const auto z = g.task("z", {c1}, {ar});
  const dag::TaskGraph graph = std::move(g.b).build();
  const IssuePlan p = exec::cuda_plan::make_issue_plan(graph, 1);
  CHECK(p.streams == std::vector<dag::ResourceId>{c1, n1});
  REQUIRE(order(p) == std::vector<dag::TaskId>{y, ar, z});
  CHECK(p.launches[0].waits.empty());                         // w is rank 0's
  CHECK(p.launches[1].waits == std::vector<dag::TaskId>{y});  // not w
  CHECK(p.launches[2].waits == std::vector<dag::TaskId>{ar});
  CHECK(order(exec::cuda_plan::make_issue_plan(graph, 0)) == std::vector<dag::TaskId>{w, ar});
}

TEST_CASE("exec::cuda_plan: a task on two of the rank's resources orders both", "[exec]") {
  // t spans intra and nic; it is launched on intra (the first); u, later on
  // nic, must wait for t's end although no dependency says so.
  Dag g;
  const auto intra = g.resource("intra");
  const auto nic = g.resource("nic");
  const auto t = g.task("t", {intra, nic});
  const auto u = g.task("u", {nic});
  const dag::TaskGraph graph = std::move(g.b).build();
  const IssuePlan p = exec::cuda_plan::make_issue_plan(graph, 0);
  REQUIRE(order(p) == std::vector<dag::TaskId>{t, u});
  CHECK(p.launches[0].stream == 0);
  CHECK(p.launches[1].stream == 1);
  CHECK(p.launches[1].waits == std::vector<dag::TaskId>{t});
}

TEST_CASE("exec::cuda_plan: in-order streams that wait on each other have no launch order", "[exec]") {
  // A: a0 then a1; B: b0 then b1; a0 after b1, b0 after a1. Acyclic as a
  // DAG, but a0 heads A behind nothing and waits for b1, which is behind b0,
  // which waits for a1, behind a0.
  Dag g;
  const auto ra = g.resource("A");
  const auto rb = g.resource("B");
  const auto a0 = g.task("a0", {ra});
  const auto a1 = g.task("a1", {ra});
  const auto b0 = g.task("b0", {rb});
  const auto b1 = g.task("b1", {rb});
  g.b.add_dependency(b1, a0);
  g.b.add_dependency(a1, b0);
  const dag::TaskGraph graph = std::move(g.b).build();
  CHECK_THROWS_WITH(exec::cuda_plan::make_issue_plan(graph, 0), Catch::Contains("no launch order exists"));
}

TEST_CASE("exec::cuda_plan::proxy_copy_bytes: size x nccl-tests' bus factor", "[exec]") {
  using model::OpClass;
  // alltoall over 8 ranks of 8 MiB: 7/8 of it leaves the rank = 7 MiB.
  CHECK(exec::cuda_plan::proxy_copy_bytes({OpClass::A2A, 8388608.0, {0, 1, 2, 3, 4, 5, 6, 7}}) == 7340032.0);
  // allreduce over 4 ranks of 1 MiB: 2 x 3/4 = 1.5 MiB.
  CHECK(exec::cuda_plan::proxy_copy_bytes({OpClass::AllReduce, 1048576.0, {0, 1, 2, 3}}) == 1572864.0);
  // allgather over 2 ranks of 1000 bytes: 500; p2p: the whole 1000.
  CHECK(exec::cuda_plan::proxy_copy_bytes({OpClass::AllGather, 1000.0, {0, 1}}) == 500.0);
  CHECK(exec::cuda_plan::proxy_copy_bytes({OpClass::P2P, 1000.0, {3, 1}}) == 1000.0);
  // a group of one moves nothing
  CHECK(exec::cuda_plan::proxy_copy_bytes({OpClass::AllReduce, 1048576.0, {2}}) == 0.0);
  // A symmetric graph's member of an alltoall priced over 4 ranks: 3/4 of 4 MiB = 3 MiB,
  // though the graph holds only this rank of the group.
  CHECK(exec::cuda_plan::proxy_copy_bytes({OpClass::A2A, 4194304.0, {0}, 4}) == 3145728.0);
  // A multi-rank graph's priced group equals its members: unchanged.
  CHECK(exec::cuda_plan::proxy_copy_bytes({OpClass::AllGather, 1000.0, {0, 1}, 2}) == 500.0);
}
