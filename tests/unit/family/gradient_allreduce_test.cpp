#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <moeplan/io/loader.hpp>
#include <moeplan/family/flowmoe/builder.hpp>
#include <moeplan/family/fsmoe/builder.hpp>
#include <moeplan/sim/engine.hpp>

#include "../test_support.hpp"

using namespace moeplan;
using model::LinkClass;
using model::OpClass;
using moeplan::testing::cost_line;

namespace {

// An inter-node line measured in the training layout: one rank per node, with
// `concurrent` groups of its kind on each node at once, so that it prices the
// scenario's strided groups of that size exactly as written (no NIC-share or
// bus-factor rescaling).
model::LinearCostSpec in_layout(OpClass op, std::int64_t group, double alpha_ms, double beta_ms,
                                std::int64_t concurrent) {
  model::LinearCostSpec line = cost_line(op, LinkClass::Inter, group, alpha_ms, beta_ms, 1);
  line.concurrent_groups = concurrent;
  return line;
}

std::vector<dag::TaskId> tasks_named(const dag::TaskGraph& g, const std::string& prefix) {
  std::vector<dag::TaskId> out;
  for (dag::TaskId t = 0; t < g.size(); ++t)
    if (g.name(t).substr(0, prefix.size()) == prefix) out.push_back(t);
  return out;
}

dag::TaskId task_named(const dag::TaskGraph& g, const std::string& name) {
  const std::vector<dag::TaskId> found = tasks_named(g, name);
  REQUIRE(found.size() == 1);
  return found.front();
}

double total_size(const dag::TaskGraph& g, const std::vector<dag::TaskId>& tasks) {
  double bytes = 0;
  for (dag::TaskId t : tasks) bytes += g.size(t);
  return bytes;
}

std::string stream_of(const dag::TaskGraph& g, dag::TaskId t) {
  REQUIRE(g.resources(t).size() == 1);
  return g.resources()[g.resources(t).front()].name;
}

// GPT2-XL-MoE on Testbed-A with experts replicated: 6 experts (one per node,
// the scenario's setting), EP 2 x EDP 3 x ETP 8, TP 8 x DP 6; two layers.
model::ScenarioSpec replicated_experts() {
  model::ScenarioSpec s = io::load_scenario(
      "fsmoe-testbed-a-gpt2-xl", {{"parallelism.ep", "2"}, {"parallelism.edp", "3"}, {"model.num_layers", "2"}});
  s.profile = model::CostProfileSpec{"replicated",
                                     s.cluster.name,
                                     {cost_line(OpClass::Gemm, LinkClass::Local, 1, 0.02, 1e-11),
                                      cost_line(OpClass::Attention, LinkClass::Local, 1, 0.02, 1e-11),
                                      cost_line(OpClass::AllGather, LinkClass::Intra, 8, 0.05, 1e-8),
                                      cost_line(OpClass::ReduceScatter, LinkClass::Intra, 8, 0.05, 1e-8),
                                      // EP: ranks 0 and 8, two nodes, 8 such groups per node.
                                      in_layout(OpClass::A2A, 2, 0.1, 1e-7, 8),
                                      // DP: ranks 0, 8, ..., 40 (stride tp = 8), one per node.
                                      in_layout(OpClass::AllReduce, 6, 0.5, 1e-6, 8),
                                      // EDP: ranks 0, 16, 32 (stride etp x ep = 16), one per node.
                                      in_layout(OpClass::AllReduce, 3, 0.4, 2e-6, 8)},
                                     1.0};
  return s;
}

// Per layer and rank, in bytes (fp32, 4 bytes a parameter):
// dense = attention / tp + router = (4 x 1600^2 + 1600 + 2 x 1600 + 1600 biases) / 8 + 1600 x 6
//       = 10,246,400 / 8 + 9,600 = 1,290,400 parameters = 5,161,600 bytes;
// expert = 6 / ep = 3 experts of (2 x 1600 x 6400 + 6400 + 1600) = 20,488,000 parameters, / etp 8
//       = 7,683,000 parameters = 30,732,000 bytes.
constexpr double kDenseBytes = 5'161'600;
constexpr double kExpertBytes = 30'732'000;

}  // namespace

TEST_CASE("fsmoe::build_fsmoe all-reduces dense gradients over DP and expert gradients over EDP", "[sched][fsmoe]") {
  const model::ScenarioSpec s = replicated_experts();
  REQUIRE(s.parallel.edp == 3);
  CHECK(fsmoe::generalized_layer_gradient_bytes(s, 0) == kDenseBytes);
  CHECK(fsmoe::generalized_layer_expert_gradient_bytes(s, 0) == kExpertBytes);
  const cost::CostModel costs(*s.profile);
  fsmoe::FsMoeKnobs k;
  k.degree_forward = k.degree_backward = 2;

  SECTION("tutel: one DP and one EDP all-reduce after the backward pass") {
    k.schedule = "tutel";
    const dag::TaskGraph g = fsmoe::build_fsmoe(s, costs, k).graph;
    const dag::TaskId dp = task_named(g, "grad-ar L-1 tail");
    const dag::TaskId edp = task_named(g, "grad-edp-ar L-1 tail");
    // Two layers: 2 x 5,161,600 = 10,323,200 bytes over the 6 DP ranks,
    // 0.5 + 10,323,200 x 1e-6 = 10.8232 ms on the DP line.
    CHECK(g.size(dp) == 2 * kDenseBytes);
    CHECK(g.group_size(dp) == 6);
    CHECK(g.duration_ms(dp) == Approx(10.8232).epsilon(1e-12));
    // 2 x 30,732,000 = 61,464,000 bytes over the 3 EDP ranks:
    // 0.4 + 61,464,000 x 2e-6 = 123.328 ms on the EDP line.
    CHECK(g.size(edp) == 2 * kExpertBytes);
    CHECK(g.group_size(edp) == 3);
    CHECK(g.duration_ms(edp) == Approx(123.328).epsilon(1e-12));
    CHECK(tasks_named(g, "grad-").size() == 2);
  }

  SECTION("fsmoe: the partition moves DP bytes only; each layer's expert gradients on the inter stream") {
    k.schedule = "fsmoe";
    k.grad_during_moe_bytes = {1e6, 0};
    k.grad_during_dense_bytes = {2e6, 0};
    const dag::TaskGraph g = fsmoe::build_fsmoe(s, costs, k).graph;
    // DP tasks: 1e6 (L0 MoE part) + 2e6 (L0 dense part) + the rest after backward = 2 x 5,161,600 in all.
    const std::vector<dag::TaskId> dp = tasks_named(g, "grad-ar ");
    CHECK(dp.size() == 3);
    CHECK(total_size(g, dp) == Approx(2 * kDenseBytes).epsilon(1e-12));
    CHECK(g.size(task_named(g, "grad-ar L-1 tail")) == Approx(2 * kDenseBytes - 3e6).epsilon(1e-12));
    for (std::int32_t layer : {0, 1}) {
      const dag::TaskId edp = task_named(g, "grad-edp-ar L" + std::to_string(layer));
      INFO("layer " << layer);
      // 0.4 + 30,732,000 x 2e-6 = 61.864 ms, on the inter-node stream (EDP spans nodes 0, 2, 4).
      CHECK(g.size(edp) == kExpertBytes);
      CHECK(g.group_size(edp) == 3);
      CHECK(g.duration_ms(edp) == Approx(61.864).epsilon(1e-12));
      CHECK(stream_of(g, edp) == "inter");
    }
    for (dag::TaskId t : dp) CHECK(stream_of(g, t) == "inter");
  }

  SECTION("pipemoe-lina: expert gradients in 30 MB chunks of their own") {
    k.schedule = "pipemoe-lina";
    const dag::TaskGraph g = fsmoe::build_fsmoe(s, costs, k).graph;
    // 30 MB = 31,457,280 bytes > 30,732,000: one expert chunk per layer, one dense chunk per layer.
    for (std::int32_t layer : {0, 1}) {
      const std::string l = "L" + std::to_string(layer);
      INFO(l);
      CHECK(total_size(g, tasks_named(g, "grad-edp-ar " + l + " chunk")) == kExpertBytes);
      CHECK(tasks_named(g, "grad-edp-ar " + l + " chunk").size() == 1);
      CHECK(total_size(g, tasks_named(g, "grad-ar " + l + " chunk")) == kDenseBytes);
    }
  }
}

TEST_CASE("fsmoe::build_fsmoe puts gradient all-reduces on the stream of their group's link", "[sched][fsmoe]") {
  // One 8-GPU node: TP 2 x DP 4 and ETP 2 x EP 2 x EDP 2. DP (ranks 0, 2, 4, 6)
  // and EDP (ranks 0, 4) stay on the node, so fsmoe runs them on its intra stream.
  model::ScenarioSpec s = io::load_scenario("fsmoe-testbed-a-gpt2-xl", {{"cluster.num_nodes", "1"},
                                                                        {"parallelism.tp", "2"},
                                                                        {"parallelism.dp", "4"},
                                                                        {"parallelism.ep", "2"},
                                                                        {"parallelism.etp", "2"},
                                                                        {"parallelism.edp", "2"},
                                                                        {"workload.global_batch_size", "16"},
                                                                        {"model.num_layers", "2"}});
  s.profile = model::CostProfileSpec{"one-node",
                                     s.cluster.name,
                                     {cost_line(OpClass::Gemm, LinkClass::Local, 1, 0.02, 1e-11),
                                      cost_line(OpClass::Attention, LinkClass::Local, 1, 0.02, 1e-11),
                                      cost_line(OpClass::AllGather, LinkClass::Intra, 2, 0.05, 1e-8),
                                      cost_line(OpClass::ReduceScatter, LinkClass::Intra, 2, 0.05, 1e-8),
                                      cost_line(OpClass::A2A, LinkClass::Intra, 2, 0.05, 1e-8),
                                      cost_line(OpClass::AllReduce, LinkClass::Intra, 2, 0.05, 1e-8),
                                      cost_line(OpClass::AllReduce, LinkClass::Intra, 4, 0.05, 1e-8)},
                                     1.0};
  const cost::CostModel costs(*s.profile);
  fsmoe::FsMoeKnobs k;
  k.schedule = "fsmoe";
  k.degree_forward = k.degree_backward = 2;
  k.grad_during_dense_bytes = {1e6, 0};
  const dag::TaskGraph g = fsmoe::build_fsmoe(s, costs, k).graph;
  const std::vector<dag::TaskId> dp = tasks_named(g, "grad-ar ");
  const std::vector<dag::TaskId> edp = tasks_named(g, "grad-edp-ar ");
  CHECK(dp.size() == 2);   // L0's dense share and the tail
  CHECK(edp.size() == 2);  // one per layer
  for (dag::TaskId t : dp) CHECK(stream_of(g, t) == "intra");
  for (dag::TaskId t : edp) CHECK(stream_of(g, t) == "intra");
}

TEST_CASE("fsmoe::build_fsmoe tutel-improved hides a layer's gradients behind the next layer's attention",
          "[sched][fsmoe]") {
  // Fig. 3b. Backward runs layer 1 then layer 0. Layer 1's dense gradients are
  // issued on the one communication stream right after layer 0's backward
  // sequence-parallel AllGather, so they start when it ends, with layer 0's
  // attention backward; layer 0's own (the last produced) go after the backward
  // pass. Expert gradients: during their own layer's dense part.
  const model::ScenarioSpec s = replicated_experts();
  const cost::CostModel costs(*s.profile);
  fsmoe::FsMoeKnobs k;
  k.schedule = "tutel-improved";
  k.degree_forward = k.degree_backward = 2;
  const sched::BuiltSchedule built = fsmoe::build_fsmoe(s, costs, k);
  const dag::TaskGraph& g = built.graph;
  const sim::Timeline t = sim::simulate(g);
  // Tasks are labelled with the layer they run in: layer 1's gradients run in layer 0.
  const dag::TaskId ar = task_named(g, "grad-ar L0 layer");
  const dag::TaskId gather = task_named(g, "bwd L0 attn-ag");
  const dag::TaskId attention = task_named(g, "bwd L0 attention");
  CHECK(g.size(ar) == kDenseBytes);
  CHECK(t.start_ms[ar] == t.end_ms[gather]);
  CHECK(t.start_ms[attention] == t.end_ms[gather]);
  CHECK(g.size(task_named(g, "grad-ar L-1 tail")) == kDenseBytes);
  CHECK(g.size(task_named(g, "grad-edp-ar L0 layer")) == kExpertBytes);
  CHECK(g.size(task_named(g, "grad-edp-ar L1 layer")) == kExpertBytes);
}

namespace {

// FlowMoE's gpt2-tiny-moe on Cluster 1 (2 nodes x 8) with EP 8 x EDP 2: every
// expert has a replica on the other node. Two blocks.
model::ScenarioSpec flowmoe_replicated() {
  model::ScenarioSpec s = io::load_scenario(
      "flowmoe-gpt2-tiny-moe-c1", {{"parallelism.ep", "8"}, {"parallelism.edp", "2"}, {"model.num_layers", "2"}});
  s.profile = model::CostProfileSpec{"replicated",
                                     s.cluster.name,
                                     {cost_line(OpClass::Gemm, LinkClass::Local, 1, 0.01, 1e-11),
                                      cost_line(OpClass::Attention, LinkClass::Local, 1, 0.01, 1e-11),
                                      // EP: ranks 0..7, one node.
                                      cost_line(OpClass::A2A, LinkClass::Intra, 8, 0.05, 1e-8),
                                      // DP: all 16 ranks, 8 per node, the only group of its kind.
                                      cost_line(OpClass::AllReduce, LinkClass::Inter, 16, 0.3, 1e-6, 8),
                                      // EDP: ranks g and g + 8, one per node, 8 such groups per node.
                                      in_layout(OpClass::AllReduce, 2, 0.2, 4e-6, 8)},
                                     1.0};
  return s;
}

// Per block and rank, fp32, no biases: dense = 4 x 256^2 + 256 x 16 (router) =
// 266,240 parameters = 1,064,960 bytes; expert = 16 / ep 8 = 2 experts of
// 2 x 256 x 512 = 262,144 parameters = 524,288 parameters = 2,097,152 bytes.
constexpr double kFlowDenseBytes = 1'064'960;
constexpr double kFlowExpertBytes = 2'097'152;

}  // namespace

TEST_CASE("flowmoe::build_flowmoe all-reduces expert gradients over EDP as their own all-reduces", "[sched][flowmoe]") {
  const model::ScenarioSpec s = flowmoe_replicated();
  REQUIRE(s.parallel.edp == 2);
  const cost::CostModel costs(*s.profile);
  flowmoe::FlowMoeKnobs k;
  k.degree = 2;
  // The top of Sp's search space is the larger per-block tensor: the expert one.
  CHECK(flowmoe::flowmoe_block_allreduce_bytes(s) == kFlowExpertBytes);

  SECTION("centralised (tutel): per block one DP and one EDP all-reduce") {
    k.schedule = "tutel";
    const dag::TaskGraph g = flowmoe::build_flowmoe(s, costs, k).graph;
    for (std::int32_t l : {0, 1}) {
      const std::string name = "L" + std::to_string(l);
      INFO(name);
      const dag::TaskId dp = task_named(g, "ar " + name);
      const dag::TaskId edp = task_named(g, "edp-ar " + name);
      // 0.3 + 1,064,960 x 1e-6 = 1.36496 ms over 16 ranks;
      // 0.2 + 2,097,152 x 4e-6 = 8.588608 ms over 2 ranks.
      CHECK(g.size(dp) == kFlowDenseBytes);
      CHECK(g.group_size(dp) == 16);
      CHECK(g.duration_ms(dp) == Approx(1.36496).epsilon(1e-12));
      CHECK(g.size(edp) == kFlowExpertBytes);
      CHECK(g.group_size(edp) == 2);
      CHECK(g.duration_ms(edp) == Approx(8.588608).epsilon(1e-12));
    }
  }

  SECTION("chunked (flowmoe): Sp chunks of each tensor, all below AlltoAll in the pool") {
    k.schedule = "flowmoe";
    k.ar_chunk_bytes = 1 << 20;
    const dag::TaskGraph g = flowmoe::build_flowmoe(s, costs, k).graph;
    for (std::int32_t l : {0, 1}) {
      const std::string name = "L" + std::to_string(l) + " chunk";
      INFO(name);
      // 1,064,960 = 1,048,576 + 16,384: two DP chunks; 2,097,152 = 2 x 1,048,576: two EDP chunks.
      const std::vector<dag::TaskId> dp = tasks_named(g, "ar " + name);
      const std::vector<dag::TaskId> edp = tasks_named(g, "edp-ar " + name);
      CHECK(dp.size() == 2);
      CHECK(edp.size() == 2);
      CHECK(total_size(g, dp) == kFlowDenseBytes);
      CHECK(total_size(g, edp) == kFlowExpertBytes);
      for (dag::TaskId t : edp) {
        CHECK(g.size(t) == 1 << 20);
        CHECK(g.priority(t) == flowmoe::kAllReducePriority);
        CHECK(g.priority(t) < flowmoe::kA2APriority);
        CHECK(g.duration_ms(t) == Approx(0.2 + 1048576 * 4e-6).epsilon(1e-12));
      }
    }
  }

  SECTION("multi-rank: one EDP all-reduce per EDP group, on its two members' pools") {
    k.schedule = "tutel";
    k.multi_rank = true;
    const dag::TaskGraph g = flowmoe::build_flowmoe(s, costs, k).graph;
    // EDP groups of Megatron's order (etp 1, ep 8): {g, g + 8} for g = 0..7.
    const std::vector<dag::TaskId> edp = tasks_named(g, "edp-ar L0");
    REQUIRE(edp.size() == 8);
    for (std::size_t i = 0; i < edp.size(); ++i) {
      const auto members = g.resources(edp[i]);
      REQUIRE(members.size() == 2);
      CHECK(g.resources()[members[0]].rank == static_cast<std::int32_t>(i));
      CHECK(g.resources()[members[1]].rank == static_cast<std::int32_t>(i) + 8);
    }
  }
}
