#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <moeplan/core/error.hpp>
#include <moeplan/exec/replay_plan.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/plan/scenario_run.hpp>

using namespace moeplan;

namespace {

using dag::AttentionCore;
using dag::GemmBatch;
using dag::WorkShape;

// Every copy (one per rank) of the task named `name` replays `expected`; there is at least one.
void check_task(const dag::TaskGraph& graph, const exec::ReplayPlan& plan, const std::string& name,
                const WorkShape& expected) {
  INFO(name);
  std::size_t copies = 0;
  for (dag::TaskId t = 0; t < graph.size(); ++t) {
    if (graph.name(t) != name) continue;
    ++copies;
    const auto* work = std::get_if<WorkShape>(&plan.tasks[t].work);
    REQUIRE(work != nullptr);
    CHECK(work->gemms == expected.gemms);
    CHECK(work->attention == expected.attention);
  }
  CHECK(copies > 0);
}

// Every compute task replays its recorded work and carries the task's FLOPs
// within the rounding of its shapes: a GEMM's dimensions are whole (at least
// 1), so each batch is off by at most one row, column or reduction step,
// 2 (n k + m k + m n) count FLOPs; an attention core's heads are whole too
// (one head: (4 head_dim + 3) per query-key pair, l (c - l) + l (l + 1) / 2
// pairs). Communication tasks replay their bytes over their resources' ranks.
void check_flops(const dag::TaskGraph& graph) {
  const exec::ReplayPlan plan = exec::make_replay_plan(graph);
  REQUIRE(plan.tasks.size() == graph.size());
  std::size_t compute = 0;
  for (dag::TaskId t = 0; t < graph.size(); ++t) {
    INFO("task " << t << " " << graph.name(t));
    const exec::ReplayTask& task = plan.tasks[t];
    if (const auto* c = std::get_if<exec::CommWork>(&task.work)) {
      CHECK(graph.kind(t) == dag::TaskKind::Communication);
      CHECK(graph.work(t) == nullptr);
      CHECK(c->size_bytes == graph.size(t));
      CHECK(c->ranks.size() == graph.resources(t).size());
      continue;
    }
    ++compute;
    const WorkShape& w = std::get<WorkShape>(task.work);
    REQUIRE(graph.work(t) != nullptr);
    CHECK(w == *graph.work(t));
    CHECK(w.attention.has_value() == (graph.op(t) == model::OpClass::Attention));
    double unit = 0;
    for (const GemmBatch& g : w.gemms) {
      const double m = static_cast<double>(g.m), n = static_cast<double>(g.n), k = static_cast<double>(g.k);
      unit += 2.0 * (n * k + m * k + m * n) * static_cast<double>(g.count);
    }
    if (w.attention) {
      const double l = static_cast<double>(w.attention->queries), c = static_cast<double>(w.attention->context);
      unit += (4.0 * static_cast<double>(w.attention->head_dim) + 3.0) * (l * (c - l) + l * (l + 1) / 2);
    }
    CHECK(std::abs(exec::replay_flops(task) - graph.size(t)) <= unit * (1 + 1e-12));
  }
  CHECK(compute > 0);
}

}  // namespace

TEST_CASE("exec::make_replay_plan replays the shapes each family's builder priced (by hand)", "[exec]") {
  SECTION("flowmoe: host-flowmoe-small, 1 layer of 2 x 64 tokens, R = 2") {
    // gpt2-tiny-moe: d 256, 4 heads of 64, 16 GELU experts of hidden 512, top-2,
    // capacity 1.0; ep 2, dp 2, every rank in the graph. A rank holds 2 x 64 =
    // 128 tokens; each of the R = 2 micro-batches half of them.
    const plan::ScenarioRun run(
        io::load_scenario("host-flowmoe-small",
                          {{"model.num_layers", "1"}, {"workload.seq_len", "64"}, {"workload.micro_batch_size", "2"}}));
    const sched::BuiltSchedule built = run.build_for_replay("flowmoe", 2);
    const exec::ReplayPlan plan = exec::make_replay_plan(built.graph);
    // AT = MHA + gating of one micro-batch (one of the 2 sequences): its FLOPs
    // are 1 sequence's attention, so 1 x 4 heads, projections of 64 rows
    // ([64 x 256] x [256 x 4 x 64], Q K V O alike: one batch of 4), the core of
    // 64 queries over 64 keys; then the router [64 x 256] x [256 x 16].
    check_task(built.graph, plan, "fwd L0 AT m0",
               {{{64, 256, 256, 4}, {64, 16, 256, 1}}, AttentionCore{64, 64, 4, 64}});
    // Backward: 2x the attention FLOPs, as 2 sequences' (8 heads, 128 rows);
    // the router's input gradient [64 x 16] x [16 x 256] and weight gradient
    // [256 x 64] x [64 x 16].
    check_task(built.graph, plan, "bwd L0 AT m1",
               {{{128, 256, 256, 4}, {64, 256, 16, 1}, {256, 16, 64, 1}}, AttentionCore{64, 64, 8, 64}});
    // Experts: 128 tokens x top-2 = 256 slots over the 16 / 2 = 8 local
    // experts, half per micro-batch: 16 rows each; up [16 x 256] x [256 x 512]
    // and down [16 x 512] x [512 x 256], 8 of each (a batch per expert).
    check_task(built.graph, plan, "fwd L0 experts m0", {{{16, 512, 256, 8}, {16, 256, 512, 8}}, std::nullopt});
    // Backward: per forward GEMM (m, n, k) its input gradient (m, k, n) and
    // weight gradient (k, n, m).
    check_task(built.graph, plan, "bwd L0 experts m0",
               {{{16, 256, 512, 8}, {256, 512, 16, 8}, {16, 512, 256, 8}, {512, 256, 16, 8}}, std::nullopt});
    check_flops(built.graph);
  }
  SECTION("foldmoe: host-foldmoe-small, 2 blocks (dense, MoE) of 128 tokens, 1a1m at d = 2") {
    // gpt-moe-s: d 512, 8 heads of 64, dense FFN 1024 (GELU), 16 experts of
    // hidden 1024, top-1; ep 2, dp 2, one sequence per rank. d = 2: attention
    // slices and MoE micro-batches of 64 tokens.
    const plan::ScenarioRun run(
        io::load_scenario("host-foldmoe-small", {{"model.num_layers", "2"}, {"workload.seq_len", "128"}}));
    const sched::BuiltSchedule built = run.build_for_replay("1a1m", 2);
    const exec::ReplayPlan plan = exec::make_replay_plan(built.graph);
    // Block 0 (dense), whole: attention of 128 queries over 128 keys, 8 heads,
    // projections [128 x 512] x [512 x 512]; the FFN up [128 x 512] x [512 x 1024], down [128 x 1024] x [1024 x 512].
    check_task(built.graph, plan, "fwd L0 attention s0", {{{128, 512, 512, 4}}, AttentionCore{128, 128, 8, 64}});
    check_task(built.graph, plan, "fwd L0 ffn", {{{128, 1024, 512, 1}, {128, 512, 1024, 1}}, std::nullopt});
    // Backward: 2x (16 heads, 256 projection rows); the FFN's gradients.
    check_task(built.graph, plan, "bwd L0 attention s0", {{{256, 512, 512, 4}}, AttentionCore{128, 128, 16, 64}});
    check_task(built.graph, plan, "bwd L0 ffn",
               {{{128, 512, 1024, 1}, {512, 1024, 128, 1}, {128, 1024, 512, 1}, {1024, 512, 128, 1}}, std::nullopt});
    // Block 1 (MoE), sliced: slice 1 is 64 queries after 64 earlier tokens.
    check_task(built.graph, plan, "fwd L1 attention s0", {{{64, 512, 512, 4}}, AttentionCore{64, 64, 8, 64}});
    check_task(built.graph, plan, "fwd L1 attention s1", {{{64, 512, 512, 4}}, AttentionCore{64, 128, 8, 64}});
    // The router of a slice's 64 tokens: [64 x 512] x [512 x 16]; backward its gradients.
    check_task(built.graph, plan, "fwd L1 gate s1", {{{64, 16, 512, 1}}, std::nullopt});
    check_task(built.graph, plan, "bwd L1 gate s0", {{{64, 512, 16, 1}, {512, 16, 64, 1}}, std::nullopt});
    // A micro-batch's 64 tokens x top-1 over 8 local experts: 8 rows each.
    check_task(built.graph, plan, "fwd L1 experts m1", {{{8, 1024, 512, 8}, {8, 512, 1024, 8}}, std::nullopt});
    check_task(built.graph, plan, "bwd L1 experts m0",
               {{{8, 512, 1024, 8}, {512, 1024, 8, 8}, {8, 1024, 512, 8}, {1024, 512, 8, 8}}, std::nullopt});
    check_flops(built.graph);
  }
  SECTION("fsmoe: fsmoe-testbed-a-gpt2-xl, 1 layer, r = 2, capacity 1.25") {
    // gpt2-xl-moe: d 1600, 16 heads of 100, 6 GELU experts of hidden 6400,
    // top-2; tp = etp = 8 with sequence parallelism, ep 6; 4 sequences of
    // 1024. A rank holds 4 x 1024 / 8 = 512 tokens outside attention.
    const plan::ScenarioRun run(io::load_scenario("fsmoe-testbed-a-gpt2-xl",
                                                  {{"model.num_layers", "1"}, {"model.moe.capacity_factor", "1.25"}}));
    const sched::BuiltSchedule built = run.build_for_replay("fsmoe", 2);
    const exec::ReplayPlan plan = exec::make_replay_plan(built.graph);
    // Attention: 4 sequences' FLOPs / tp 8 = half a sequence: 0.5 x 16 = 8
    // heads of the whole 1024-token sequence, projections of 512 rows
    // [512 x 1600] x [1600 x 1600]; backward 2x: 16 heads, 1024 rows.
    check_task(built.graph, plan, "fwd L0 attention", {{{512, 1600, 1600, 4}}, AttentionCore{1024, 1024, 8, 100}});
    check_task(built.graph, plan, "bwd L0 attention", {{{1024, 1600, 1600, 4}}, AttentionCore{1024, 1024, 16, 100}});
    // The router of the rank's 512 tokens: [512 x 1600] x [1600 x 6].
    check_task(built.graph, plan, "fwd L0 gate", {{{512, 6, 1600, 1}}, std::nullopt});
    check_task(built.graph, plan, "bwd L0 gate", {{{512, 1600, 6, 1}, {1600, 6, 512, 1}}, std::nullopt});
    // Experts: 512 x top-2 x 1.25 = 1280 slots, gathered over etp 8 to 10240,
    // on 6 / 6 = 1 local expert, per chunk of r = 2: 5120 rows against
    // 6400 / 8 = 800 hidden columns.
    check_task(built.graph, plan, "fwd L0 experts c1", {{{5120, 800, 1600, 1}, {5120, 1600, 800, 1}}, std::nullopt});
    check_task(
        built.graph, plan, "bwd L0 experts c0",
        {{{5120, 1600, 800, 1}, {1600, 800, 5120, 1}, {5120, 800, 1600, 1}, {800, 1600, 5120, 1}}, std::nullopt});
    check_flops(built.graph);
  }
}

TEST_CASE("exec::make_replay_plan keeps every task's FLOPs, bundled scenarios", "[exec]") {
  // Sliced attention, dense FFNs, TP collectives (foldmoe), GQA-less MHA
  // (gpt-moe), time-uniform slices (1a1m-uniform).
  const plan::ScenarioRun fold(io::load_scenario("foldmoe-gpt-moe-s-4k"));
  for (const char* s : {"none", "1a1m-uniform"}) check_flops(fold.build_for_replay(s).graph);
  const plan::ScenarioRun flow(io::load_scenario("host-flowmoe-small"));
  for (const char* s : {"none", "flowmoe"}) check_flops(flow.build_for_replay(s).graph);
  const plan::ScenarioRun fs(io::load_scenario("fsmoe-testbed-a-gpt2-xl", {{"model.num_layers", "2"}}));
  check_flops(fs.build_for_replay("fsmoe").graph);
}

TEST_CASE("exec::make_replay_plan refuses a compute task without recorded work", "[exec]") {
  // build() records no shapes (searches pay nothing for them): the replay
  // names the first compute task instead of guessing its shape.
  const plan::ScenarioRun run(io::load_scenario("host-flowmoe-small", {{"model.num_layers", "1"}}));
  const sched::BuiltSchedule built = run.build("none");
  try {
    (void)exec::make_replay_plan(built.graph);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Input);
    CHECK_THAT(e.what(), Catch::Contains("task 0 ('fwd L0 AT')") && Catch::Contains("without a recorded work shape"));
  }
}

TEST_CASE("dag::TaskGraph: work shapes cost nothing when none is recorded", "[exec][dag]") {
  // The same schedule built with and without its shapes: the same tasks, and
  // without them no task has work and the graph holds no byte for it; with
  // them, a 4-byte index per task and each distinct shape once.
  const plan::ScenarioRun run(io::load_scenario("host-foldmoe-small", {{"model.num_layers", "2"}}));
  const sched::BuiltSchedule plain = run.build("1a1m", 2);
  const sched::BuiltSchedule recorded = run.build_for_replay("1a1m", 2);
  const dag::TaskGraph& a = plain.graph;
  const dag::TaskGraph& b = recorded.graph;
  REQUIRE(a.size() == b.size());
  std::vector<WorkShape> distinct;
  for (dag::TaskId t = 0; t < a.size(); ++t) {
    CHECK(a.work(t) == nullptr);
    CHECK(a.name(t) == b.name(t));
    CHECK(a.duration_ms(t) == b.duration_ms(t));
    CHECK((b.work(t) != nullptr) == (b.kind(t) == dag::TaskKind::Compute));
    if (b.work(t) != nullptr && std::find(distinct.begin(), distinct.end(), *b.work(t)) == distinct.end())
      distinct.push_back(*b.work(t));
  }
  std::size_t shape_bytes = distinct.size() * sizeof(WorkShape);
  for (const WorkShape& w : distinct) shape_bytes += w.gemms.size() * sizeof(GemmBatch);
  CHECK(b.memory_bytes() == a.memory_bytes() + 4 * b.size() + shape_bytes);
}
