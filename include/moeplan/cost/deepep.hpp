#pragma once
// Megatron-Core's flex token dispatcher on DeepEP's normal kernels
// (schedule.moe_dispatcher = "deepep"; docs/cost-model.md, "DeepEP
// dispatcher"). Where the AlltoAll dispatcher sends one copy of a token per
// routed expert, DeepEP sends one per destination GPU, and across nodes one
// per destination node, which the receiving GPU forwards over NVLink. Its
// HybridEP backend ("hybridep") is priced by the same rule with an NVLink
// domain for the node (check_hybridep).

#include <cstdint>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// The GPUs of a node DeepEP's normal kernels forward between over NVLink
/// (deepseek-ai/DeepEP@dd758caf csrc/kernels/legacy/compiled.cuh
/// LEGACY_NUM_MAX_NVL_PEERS; csrc/legacy/buffer.hpp takes ranks r..r+7 of the
/// group as one node's). Megatron-Core's fused_a2a.py runs these kernels.
inline constexpr std::int64_t kDeepepNvlPeers = 8;

/// C(pool - marked, picks) / C(pool, picks): the chance that `picks` distinct
/// experts drawn uniformly from `pool` miss all `marked` of them.
double miss_probability(double pool, double marked, std::int64_t picks);

/// The expected number of `holders` (equal consecutive blocks of the model's
/// experts: the nodes, or the ranks, of an EP group) that a token's top-k
/// experts reach under balanced routing: holders x (1 - C(E - E/h, k) / C(E, k)).
/// Group-limited routing (moe.topk_groups of moe.num_expert_groups) draws the
/// groups uniformly and the experts uniformly among the chosen groups' experts,
/// when groups and holders nest (one divides the other); else it is ignored.
double expected_holders_reached(const model::MoeSpec& moe, std::int64_t holders);

/// @brief The AlltoAll buffers that move what DeepEP moves, so that the
/// profile's AlltoAll lines (CostModel::lines_for) price it.
struct DeepepBuffers {
  /// tokens x distinct destination nodes x token bytes: the network part of
  /// an AlltoAll moves (n - 1) / n of it per rank, one copy per remote node
  /// reached (within one node: distinct destination GPUs, on the intra line).
  double network_bytes = 0;
  /// tokens x nodes x distinct destination GPUs x token bytes: the on-node
  /// part moves (m - 1) / p of it, the copies a node's receiving GPU forwards
  /// to the other GPUs of its experts.
  double nvlink_bytes = 0;
};

/// The buffers of one dispatch (a combine moves the same back) of
/// `tokens_per_rank` tokens of `token_bytes` over the EP group `ep`.
DeepepBuffers deepep_buffers(const model::MoeSpec& moe, const GroupShape& ep, double tokens_per_rank,
                             double token_bytes);

/// Input error (field schedule.moe_dispatcher) where DeepEP's normal kernels
/// do not run as priced: an EP group of one, expert tensor parallelism, a
/// multi-node NVLink domain, a node holding other than 8 of the group's ranks
/// across nodes, or a capacity factor other than 1.
void check_deepep(const model::ScenarioSpec& s, const GroupShape& ep, std::int64_t etp);

/// Input error (field schedule.moe_dispatcher) where HybridEP's kernels do
/// not run as priced: an EP group of one, expert tensor parallelism, a
/// capacity factor other than 1, or NVLink domains holding unequal shares of
/// the group. HybridEP (NVIDIA's, in DeepEP's hybrid-ep branch; Megatron-Core's
/// flex dispatcher with backend hybridep) moves what DeepEP moves with an
/// NVLink domain as the node: one copy per destination domain over the
/// network, one per destination GPU within it; deepep_buffers prices it on the
/// group's shape, whose ranks_per_node counts the ranks of one link domain.
void check_hybridep(const model::ScenarioSpec& s, const GroupShape& ep, std::int64_t etp);

/// One dispatch's time: the network part and the NVLink part run at once
/// (DeepEP forwards while it receives), the longer counts.
Milliseconds deepep_dispatch_time(const CostModel& costs, const GroupShape& ep, const DeepepBuffers& buffers);

}  // namespace moeplan::cost
