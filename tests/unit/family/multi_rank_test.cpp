// multi_rank mode of the FoldMoE and FSMoE builders (issue 15, item 3): every
// rank of the cluster with its own streams, collectives held by their groups.
// On identical ranks rank 0's times equal the symmetric graph's; the graph
// holds each rank's local tasks once per rank and each collective once per
// group (counts derived by hand below, not read back from the builder).

#include <catch2/catch.hpp>

#include <algorithm>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/routing.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/family/foldmoe/builder.hpp>
#include <moeplan/family/fsmoe/builder.hpp>

using namespace moeplan;

namespace {

double iteration_ms(const sched::BuiltSchedule& built) { return plan::evaluate(built).iteration_ms; }

sched::ScheduleKnobs fold_knobs(const std::string& name, std::int64_t degree, bool multi_rank) {
  sched::ScheduleKnobs k{name, degree, {}};
  k.multi_rank = multi_rank;
  return k;
}

// Tasks one rank holds in the symmetric graph, by where they run.
struct Counts {
  std::size_t local = 0, tp = 0, etp = 0, ep = 0, dp = 0, edp = 0;
  std::size_t symmetric() const { return local + tp + etp + ep + dp + edp; }
};

// Group counts of a layout: world / group size for each kind.
struct Groups {
  std::size_t world = 1, tp = 1, etp = 1, ep = 1, dp = 1, edp = 1;
};

std::size_t multi_rank_tasks(const Counts& c, const Groups& g) {
  return c.local * g.world + c.tp * g.tp + c.etp * g.etp + c.ep * g.ep + c.dp * g.dp + c.edp * g.edp;
}

}  // namespace

// foldmoe-gpt-moe-s-4k: 2 nodes x 8 = 16 ranks; tp 8 with sequence parallelism,
// dp 2, ep 16, etp 1, edp 1; 6 blocks, MoE at blocks 1, 3, 5 (interval 2,
// offset 1), dense at 0, 2, 4; global batch 2 = one micro-batch per DP rank.
// Groups (Megatron order tp-cp-ep-dp-pp): tp {0..7}, {8..15} = 2 groups; ep
// {0..15} = 1; dp {0, 8}, {1, 9}, ... = 8; no etp or edp collectives (size 1).
//
// Per rank, by hand from foldmoe.cpp:
//  dense block, forward: [attn-ag] attention [attn-rs], [ffn-ag] ffn [ffn-rs]
//    = 2 local + 4 tp; backward mirrors it: 2 local + 4 tp.
//  MoE block at d slices (aaam, 1a1m: token-uniform, attention slice k feeds MoE
//    micro-batch k), forward: per slice [ag] attention [rs] gate = 2 local + 2 tp,
//    per micro-batch dispatch, experts, combine = 1 local + 2 ep; backward the
//    same reversed: (3d local, 2d tp, 2d ep) each way.
//  none: d = 1.
//  Gradients: one dense all-reduce over DP per block (6); edp = 1: no expert ones.
// So local = 3 x 4 + 3 x 6d, tp = 3 x 8 + 3 x 4d, ep = 3 x 4d, dp = 6.
//  d = 1: local 30, tp 36, ep 12, dp 6: 84 symmetric;
//         multi-rank 30 x 16 + 36 x 2 + 12 x 1 + 6 x 8 = 480 + 72 + 12 + 48 = 612.
//  d = 2: local 48, tp 48, ep 24, dp 6: 126 symmetric;
//         multi-rank 48 x 16 + 48 x 2 + 24 x 1 + 6 x 8 = 768 + 96 + 24 + 48 = 936.
TEST_CASE("foldmoe::build_foldmoe multi_rank: one rank's program per rank, collectives once per group",
          "[sched][foldmoe][multi_rank]") {
  const model::ScenarioSpec s = io::load_scenario("foldmoe-gpt-moe-s-4k");
  const cost::CostModel costs(*s.profile);
  const Groups groups{16, 2, 1, 1, 8, 1};
  struct Case {
    const char* schedule;
    std::int64_t degree;
    Counts counts;
  };
  const Case cases[] = {
      {"none", 1, {30, 36, 0, 12, 6, 0}},
      {"aaam", 2, {48, 48, 0, 24, 6, 0}},
      {"1a1m", 2, {48, 48, 0, 24, 6, 0}},
  };
  for (const Case& c : cases) {
    INFO(c.schedule);
    const sched::BuiltSchedule symmetric = foldmoe::build_foldmoe(s, costs, fold_knobs(c.schedule, c.degree, false));
    const sched::BuiltSchedule ranks = foldmoe::build_foldmoe(s, costs, fold_knobs(c.schedule, c.degree, true));
    CHECK(symmetric.graph.size() == c.counts.symmetric());
    CHECK(ranks.graph.size() == multi_rank_tasks(c.counts, groups));
    CHECK(ranks.graph.size() == (c.degree == 1 ? 612u : 936u));
    CHECK(iteration_ms(ranks) == Approx(iteration_ms(symmetric)).epsilon(1e-12));
  }
  // Every schedule, identical ranks: rank 0's iteration as in the symmetric graph.
  for (const std::string& name : foldmoe::foldmoe_schedules()) {
    INFO(name);
    CHECK(iteration_ms(foldmoe::build_foldmoe(s, costs, fold_knobs(name, 4, true))) ==
          Approx(iteration_ms(foldmoe::build_foldmoe(s, costs, fold_knobs(name, 4, false)))).epsilon(1e-12));
  }
}

TEST_CASE("foldmoe::build_foldmoe multi_rank with etp and edp groups equals symmetric", "[sched][foldmoe][multi_rank]") {
  // etp 2, ep 4: expert groups etp {0, 1}, ...; ep {0, 2, 4, 6}, {1, 3, 5, 7},
  // {8, 10, 12, 14}, ...; edp = 16 / 8 = 2: {0, 8}, {1, 9}, ... And tp 4 (dp 4,
  // batch 4): tp groups of 4, dp {0, 4, 8, 12}, ...
  const model::ScenarioSpec s =
      io::load_scenario("foldmoe-gpt-moe-s-4k", {{"parallelism.etp", "2"}, {"parallelism.ep", "4"},
                                                 {"parallelism.tp", "4"}, {"parallelism.dp", "4"},
                                                 {"workload.global_batch_size", "4"}});
  const cost::CostModel costs(*s.profile);
  for (const char* name : {"none", "1a1m"}) {
    INFO(name);
    CHECK(iteration_ms(foldmoe::build_foldmoe(s, costs, fold_knobs(name, 2, true))) ==
          Approx(iteration_ms(foldmoe::build_foldmoe(s, costs, fold_knobs(name, 2, false)))).epsilon(1e-12));
  }
}

TEST_CASE("foldmoe::build_foldmoe multi_rank stragglers lengthen the chain of schedule none by its compute",
          "[sched][foldmoe][multi_rank][straggler]") {
  // Schedule none is one chain per rank: every task waits for the one issued
  // before it (foldmoe_test: its iteration is the sum of its durations). With C
  // the symmetric graph's compute durations and M its communication, T = C + M.
  // Every rank at factor 2 (fraction 1): each chain computes 2C, T = 2C + M.
  // Rank 0 alone at factor 2 (fraction 1/16 of 16 ranks: ceil(1) = 1 rank):
  // the others reach every collective no later than rank 0, so rank 0 never
  // waits and T = 2C + M again.
  model::ScenarioSpec s = io::load_scenario("foldmoe-gpt-moe-s-4k");
  const cost::CostModel costs(*s.profile);
  const sched::BuiltSchedule symmetric = foldmoe::build_foldmoe(s, costs, fold_knobs("none", 1, false));
  double compute = 0, comm = 0;
  for (dag::TaskId t = 0; t < symmetric.graph.size(); ++t)
    (symmetric.graph.kind(t) == dag::TaskKind::Compute ? compute : comm) += symmetric.graph.duration_ms(t);
  REQUIRE(compute > 0);
  REQUIRE(comm > 0);
  s.schedule.multi_rank = true;
  s.schedule.slow_ranks_compute_factor = 2.0;
  for (double fraction : {1.0, 1.0 / 16}) {
    INFO(fraction);
    s.schedule.slow_ranks_fraction = fraction;
    const sched::BuiltSchedule slowed = foldmoe::build_foldmoe(s, costs, fold_knobs("none", 1, true));
    REQUIRE(slowed.rank_compute_slowdown.size() == 16);
    CHECK(iteration_ms(slowed) == Approx(2 * compute + comm).epsilon(1e-12));
  }
  CHECK(iteration_ms(symmetric) == Approx(compute + comm).epsilon(1e-12));
}

TEST_CASE("foldmoe::build_foldmoe refuses multi_rank across pipeline stages", "[sched][foldmoe][multi_rank]") {
  model::ScenarioSpec s = io::load_scenario("foldmoe-gpt-moe-s-4k");
  const cost::CostModel costs(*s.profile);
  s.parallel.pp = 2;  // as a caller could build it; a scenario file is refused earlier (options)
  s.parallel.dp = 1;
  s.parallel.ep = 8;
  try {
    foldmoe::build_foldmoe(s, costs, fold_knobs("none", 1, true));
    FAIL("built");
  } catch (const Error& e) {
    CHECK(e.field() == "schedule.mode");
    CHECK_THAT(e.reason(), Catch::Contains("needs pp = vpp = 1"));
  }
}

// fsmoe-table4-testbed-a: 6 nodes x 8 = 48 ranks; tp 8 with sequence
// parallelism, dp 6, ep 6, etp 8, edp 1; 2 generalized layers; one micro-batch.
// Groups (tp-cp-ep-dp-pp, etp innermost for experts): tp {0..7}, ... = 6;
// etp the same 6; ep {0, 8, ..., 40}, ... = 8; dp {0, 8, ..., 40}, ... = 8.
//
// Per rank and layer, by hand from fsmoe.cpp at degree r:
//  dense part forward: attn-ag, attention, attn-rs, gate = 2 local + 2 tp;
//    backward: gate, attn-ag, attention, attn-rs = 2 local + 2 tp.
//  MoE part, each way: per chunk dispatch, esp-ag, experts, esp-rs, combine
//    = 1 local + 2 etp + 2 ep.
//  none (r = 1): all gradients in one tail all-reduce over DP (edp = 1: no expert one).
//    Two layers: local 2 x 6 = 12, tp 2 x 4 = 8, etp 2 x 4 = 8, ep 8, dp 1: 37 symmetric;
//    multi-rank 12 x 48 + 8 x 6 + 8 x 6 + 8 x 8 + 1 x 8 = 576 + 48 + 48 + 64 + 8 = 744.
//  fsmoe at r = 2 with a quarter of each layer's dense gradients during its MoE
//    part and a quarter during its dense part: 2 DP all-reduces per layer, the
//    rest at the tail. Two layers: local 2 x 8 = 16, tp 8, etp 2 x 8 = 16,
//    ep 16, dp 2 x 2 + 1 = 5: 61 symmetric; multi-rank
//    16 x 48 + 8 x 6 + 16 x 6 + 16 x 8 + 5 x 8 = 768 + 48 + 96 + 128 + 40 = 1080.
TEST_CASE("fsmoe::build_fsmoe multi_rank: one rank's program per rank, collectives once per group",
          "[sched][fsmoe][multi_rank]") {
  const model::ScenarioSpec s = io::load_scenario("fsmoe-table4-testbed-a");
  const cost::CostModel costs(*s.profile);
  REQUIRE(s.cluster.world_size() == 48);
  const Groups groups{48, 6, 6, 8, 8, 1};
  const double quarter = fsmoe::generalized_layer_gradient_bytes(s, 0) / 4;
  auto knobs = [&](const std::string& name, bool multi_rank) {
    fsmoe::FsMoeKnobs k;
    k.schedule = name;
    k.degree_forward = k.degree_backward = 2;
    if (name == "fsmoe" || name == "fsmoe-no-iio") k.grad_during_moe_bytes = k.grad_during_dense_bytes = {quarter, quarter};
    k.multi_rank = multi_rank;
    return k;
  };
  struct Case {
    const char* schedule;
    Counts counts;
    std::size_t multi;
  };
  const Case cases[] = {
      {"none", {12, 8, 8, 8, 1, 0}, 744},
      {"fsmoe", {16, 8, 16, 16, 5, 0}, 1080},
  };
  for (const Case& c : cases) {
    INFO(c.schedule);
    const sched::BuiltSchedule symmetric = fsmoe::build_fsmoe(s, costs, knobs(c.schedule, false));
    const sched::BuiltSchedule ranks = fsmoe::build_fsmoe(s, costs, knobs(c.schedule, true));
    CHECK(symmetric.graph.size() == c.counts.symmetric());
    CHECK(ranks.graph.size() == multi_rank_tasks(c.counts, groups));
    CHECK(ranks.graph.size() == c.multi);
    CHECK(iteration_ms(ranks) == Approx(iteration_ms(symmetric)).epsilon(1e-12));
  }
  for (const std::string& name : fsmoe::fsmoe_schedules()) {
    INFO(name);
    CHECK(iteration_ms(fsmoe::build_fsmoe(s, costs, knobs(name, true))) ==
          Approx(iteration_ms(fsmoe::build_fsmoe(s, costs, knobs(name, false)))).epsilon(1e-12));
  }
}

TEST_CASE("fsmoe::build_fsmoe multi_rank with EDP groups equals symmetric", "[sched][fsmoe][multi_rank]") {
  // ep 3 (of 6 experts): edp = 48 / (8 x 3) = 2, expert gradients over EDP
  // groups {i, i + 24}; ep groups {0, 8, 16}, {24, 32, 40}, ...
  const model::ScenarioSpec s =
      io::load_scenario("fsmoe-table4-testbed-a", {{"parallelism.ep", "3"}, {"parallelism.edp", "2"}});
  const cost::CostModel costs(*s.profile);
  for (const std::string& name : fsmoe::fsmoe_schedules()) {
    INFO(name);
    fsmoe::FsMoeKnobs k;
    k.schedule = name;
    k.degree_forward = k.degree_backward = 2;
    const double symmetric = iteration_ms(fsmoe::build_fsmoe(s, costs, k));
    k.multi_rank = true;
    CHECK(iteration_ms(fsmoe::build_fsmoe(s, costs, k)) == Approx(symmetric).epsilon(1e-12));
  }
}

// Uneven expert load in multi_rank mode (issue 15 item 4): each rank's expert
// GEMMs are sized by the tokens it received and each EP group's AlltoAll lasts
// as long as its slowest member's all-to-all-v. Second formulation: the
// per-rank loads drawn over the layout's EP groups (cost::route, whose sampler
// routing_test checks by hand), priced by the cost model, against the tasks
// the builders emitted. With a single EP group, symmetric mode prices every
// rank at that group's most loaded rank of the most loaded layer: every task
// there is at least as long, so on in-order streams its iteration bounds the
// multi-rank one from above.
namespace {

struct Routed {
  model::ScenarioSpec s;
  sched::RankLayout layout;
  cost::RoutedLoads loads;
};

Routed routed(const std::string& scenario, const char* family) {
  Routed r{io::load_scenario(scenario, {{"schedule.mode", "multi_rank"}, {"model.moe.dropless", "true"},
                                        {"workload.routing", "zipf"}, {"workload.routing_zipf_s", "1.2"}}),
           {}, {}};
  r.layout = sched::rank_layout(r.s, true, family);
  r.loads = cost::route(r.s, r.layout.ep);
  return r;
}

// Every A2A task: its duration is the largest of its members' own times; every
// experts task: its FLOPs are its rank's own share. Returns how many distinct
// expert sizes the graph holds (ranks differ: more than one).
std::size_t check_per_rank(const Routed& r, const cost::CostModel& costs, const dag::TaskGraph& g,
                           double chunk_share) {
  std::vector<std::int64_t> moe_index;
  std::int64_t next = 0;
  for (bool moe : r.s.model.moe_layer) moe_index.push_back(moe ? next++ : -1);
  const cost::GroupShape ep_group = cost::strided_group_shape(r.s.parallel.ep, r.s.parallel.etp, r.s.cluster);
  std::vector<double> expert_sizes;
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    if (g.layer(t) < 0) continue;
    const std::int64_t m = moe_index[static_cast<std::size_t>(g.layer(t))];
    if (m < 0) continue;
    const std::vector<cost::RankLoad>& layer = r.loads.layers[static_cast<std::size_t>(m)];
    if (g.op(t) == model::OpClass::A2A) {
      double slowest = 0;
      for (dag::ResourceId res : g.resources(t)) {
        const std::size_t rank = static_cast<std::size_t>(g.resources()[res].rank);
        const double bytes =
            cost::moe_layer_sizes_for(r.s.model, r.s.parallel, r.s.workload, layer[rank]).dispatch_bytes * chunk_share;
        slowest = std::max(slowest, costs.communication(model::OpClass::A2A, ep_group, bytes).value);
      }
      CHECK(g.duration_ms(t) == Approx(slowest).epsilon(1e-12));
    } else if (g.kind(t) == dag::TaskKind::Compute && g.name(t).find("experts") != std::string_view::npos) {
      const std::size_t rank = static_cast<std::size_t>(g.resources()[g.resources(t).front()].rank);
      const cost::MoeLayerSizes own = cost::moe_layer_sizes_for(r.s.model, r.s.parallel, r.s.workload, layer[rank]);
      const double flops =
          (g.phase(t) == dag::Phase::Backward ? own.expert_backward_flops : own.expert_forward_flops) * chunk_share;
      CHECK(g.size(t) == Approx(flops).epsilon(1e-12));
      if (std::find(expert_sizes.begin(), expert_sizes.end(), g.size(t)) == expert_sizes.end())
        expert_sizes.push_back(g.size(t));
    }
  }
  return expert_sizes.size();
}

}  // namespace

TEST_CASE("FoldMoE multi_rank sizes each rank by its own routed load (dropless zipf)", "[sched][multi_rank]") {
  const Routed r = routed("foldmoe-gpt-moe-s-4k", "FoldMoE");
  const cost::CostModel costs(*r.s.profile);
  // none: one MoE micro-batch holding the whole sequence (share 1).
  const sched::BuiltSchedule multi = foldmoe::build_foldmoe(r.s, costs, fold_knobs("none", 1, true));
  CHECK(check_per_rank(r, costs, multi.graph, 1.0) > 1);
  const sched::BuiltSchedule symmetric = foldmoe::build_foldmoe(r.s, costs, fold_knobs("none", 1, false));
  CHECK(iteration_ms(multi) <= iteration_ms(symmetric) * (1 + 1e-12));
}

TEST_CASE("FSMoE multi_rank sizes each rank by its own routed load (dropless zipf)", "[sched][multi_rank]") {
  const Routed r = routed("fsmoe-table4-testbed-a", "FSMoE");
  const cost::CostModel costs(*r.s.profile);
  fsmoe::FsMoeKnobs k;
  k.schedule = "none";
  k.multi_rank = true;
  const sched::BuiltSchedule multi = fsmoe::build_fsmoe(r.s, costs, k);
  CHECK(check_per_rank(r, costs, multi.graph, 1.0) > 1);
  // No bound against symmetric mode here: it draws one EP group (the most
  // loaded rank of that group), while this graph draws each of its 8 EP groups,
  // whose most loaded ranks can carry more (FoldMoE's case above has one group).
}
