#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include <moeplan/exec/replay_plan.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/plan/scenario_run.hpp>

using namespace moeplan;

namespace {

// Every compute task's replay carries the task's FLOPs within the rounding of
// one unit: a GEMM's row count m = round(size / u) with u = 2 k n count (the
// FLOPs of one row). Rounding moves the FLOPs by at most u / 2; when size <
// u / 2 the count is raised to 1, which moves them by u - size < u. So
// |replay - size| <= max(u / 2, u - size). An attention task rounds two
// counts, its core's heads (unit: one head's core FLOPs) and its projections'
// rows (unit: 2 d_model (2 heads + 2 kv_heads) head_dim, Q, K, V and O of one
// token), so it stays within the sum of the two units.
void check_flops(const sched::BuiltSchedule& built, const model::ScenarioSpec& spec) {
  const exec::ReplayPlan plan = exec::make_replay_plan(built.graph, spec, built.slicing_tokens);
  REQUIRE(plan.tasks.size() == built.graph.size());
  std::size_t compute = 0;
  for (dag::TaskId t = 0; t < built.graph.size(); ++t) {
    const exec::ReplayTask& task = plan.tasks[t];
    const double size = built.graph.size(t);
    INFO("task " << t << " " << built.graph.name(t));
    if (const auto* c = std::get_if<exec::CommWork>(&task.work)) {
      CHECK(built.graph.kind(t) == dag::TaskKind::Communication);
      CHECK(c->size_bytes == size);
      CHECK(c->ranks.size() == built.graph.resources(t).size());
      continue;
    }
    ++compute;
    double unit = 0;
    if (const auto* g = std::get_if<exec::GemmWork>(&task.work)) {
      CHECK(built.graph.op(t) == model::OpClass::Gemm);
      CHECK(g->k == spec.model.d_model);  // every GEMM of these models reads d_model-wide activations
      unit = 2.0 * static_cast<double>(g->k) * static_cast<double>(g->n) * static_cast<double>(g->count);
    } else {
      const auto& a = std::get<exec::AttentionWork>(task.work);
      CHECK(built.graph.op(t) == model::OpClass::Attention);
      CHECK(a.head_dim == spec.model.head_dim);
      CHECK(a.queries <= a.context);
      // one head: (4 k + 3) per query-key pair, l (c - l) + l (l + 1) / 2 pairs
      const double l = static_cast<double>(a.queries), c = static_cast<double>(a.context);
      const double head = (4.0 * static_cast<double>(a.head_dim) + 3.0) * (l * (c - l) + l * (l + 1) / 2);
      const double kv = static_cast<double>(spec.model.num_kv_heads > 0 ? spec.model.num_kv_heads
                                                                        : spec.model.num_heads);
      const double row = 2.0 * static_cast<double>(spec.model.d_model) *
                         (2.0 * static_cast<double>(spec.model.num_heads) + 2.0 * kv) *
                         static_cast<double>(spec.model.head_dim);
      // The projections run before the core: Q, K, V, O, [rows x d_model] x [d_model x heads head_dim]
      // (MHA: one shape, 4 kernels; GQA: Q, then K and V of kv_heads head_dim, then O).
      const bool mha = kv == static_cast<double>(spec.model.num_heads);
      REQUIRE(a.projections.size() == (mha ? 1u : 3u));
      if (mha) CHECK(a.projections.front().count == 4);
      CHECK(a.projections.front().k == spec.model.d_model);
      CHECK(a.projections.front().n == spec.model.num_heads * spec.model.head_dim);
      CHECK(std::abs(exec::replay_flops(task) - size) <= (head + row) * (1 + 1e-12));
      continue;
    }
    CHECK(std::abs(exec::replay_flops(task) - size) <= std::max(unit / 2, unit - size) * (1 + 1e-12));
  }
  CHECK(compute > 0);
}

sched::BuiltSchedule build(const plan::ScenarioRun& run, const std::string& schedule) { return run.build(schedule); }

}  // namespace

TEST_CASE("exec::make_replay_plan keeps every task's FLOPs, one scenario per family", "[exec]") {
  SECTION("flowmoe (host-flowmoe-small, multi_rank)") {
    const plan::ScenarioRun run(io::load_scenario("host-flowmoe-small"));  // multi_rank
    for (const char* s : {"none", "flowmoe"}) check_flops(build(run, s), run.spec());
  }
  SECTION("foldmoe (foldmoe-gpt-moe-s-4k: sliced attention, gates, dense FFNs, TP collectives)") {
    const plan::ScenarioRun run(io::load_scenario("foldmoe-gpt-moe-s-4k"));
    for (const char* s : {"none", "1a1m-uniform"}) {
      const sched::BuiltSchedule built = build(run, s);
      check_flops(built, run.spec());
      // The slices' attention tasks replay the slice: queries = the slice, context = the slices up to it.
      const exec::ReplayPlan plan = exec::make_replay_plan(built.graph, run.spec(), built.slicing_tokens);
      for (dag::TaskId t = 0; t < built.graph.size(); ++t) {
        const auto* a = std::get_if<exec::AttentionWork>(&plan.tasks[t].work);
        if (a == nullptr || built.slicing_tokens.empty()) continue;
        const std::size_t k = static_cast<std::size_t>(built.graph.micro_batch(t));
        if (k >= built.slicing_tokens.size()) continue;
        CHECK(a->queries == built.slicing_tokens[k]);
        CHECK(a->context == std::accumulate(built.slicing_tokens.begin(), built.slicing_tokens.begin() + k + 1,
                                            std::int64_t{0}));
      }
    }
  }
  SECTION("fsmoe (fsmoe-testbed-a-gpt2-xl)") {
    const plan::ScenarioRun run(io::load_scenario("fsmoe-testbed-a-gpt2-xl", {{"model.num_layers", "2"}}));
    check_flops(build(run, "fsmoe"), run.spec());
  }
}
