#include <moeplan/cost/deepep.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {

// C(n, r) / C(total, draws)-style ratios stay in range through logarithms.
double log_choose(double n, double r) { return std::lgamma(n + 1.0) - std::lgamma(r + 1.0) - std::lgamma(n - r + 1.0); }

// Hypergeometric: of `draws` groups drawn from `total`, `i` among the `marked` ones.
double hypergeometric(std::int64_t total, std::int64_t marked, std::int64_t draws, std::int64_t i) {
  if (i > marked || draws - i > total - marked || i < 0 || i > draws) return 0.0;
  const double t = as_double(total), m = as_double(marked), d = as_double(draws), x = as_double(i);
  return std::exp(log_choose(m, x) + log_choose(t - m, d - x) - log_choose(t, d));
}

void refuse(const std::string& why, const char* backend = "deepep") {
  throw_input_error("schedule.moe_dispatcher", std::string(backend) + ": " + why);
}

// What both backends of Megatron-Core's flex dispatcher require, and what
// neither is priced for.
void check_flex(const model::ScenarioSpec& s, const GroupShape& ep, std::int64_t etp, const char* backend) {
  // Megatron-Core's flex dispatcher asserts TP x EP > 1 (token_dispatcher.py).
  if (ep.size < 2)
    refuse("an EP group of one dispatches nothing (Megatron-Core's flex dispatcher needs ep x etp > 1)", backend);
  // With etp > 1 the flex dispatcher sends tp x top-k copies over the etp x ep
  // group in place of the expert-tensor AllGather: another shape, not priced.
  if (etp > 1) refuse("expert tensor parallelism (etp > 1) under the flex dispatcher is not modelled", backend);
  // Both send routed tokens only: Megatron-Core refuses padding to capacity
  // with the flex dispatcher (transformer_config.py); dropping under a factor
  // below 1 is not modelled.
  if (s.model.moe.capacity_factor && *s.model.moe.capacity_factor != 1.0)
    refuse(fmt::format("capacity factor {} (the flex dispatcher sends the routed tokens, no padding; only 1 or "
                       "dropless is modelled)",
                       *s.model.moe.capacity_factor),
           backend);
}

}  // namespace

double miss_probability(double pool, double marked, std::int64_t picks) {
  // C(N - h, k) / C(N, k) = prod over t < k of (N - h - t) / (N - t); a factor
  // at or below zero means fewer unmarked experts than picks: every draw hits.
  double p = 1.0;
  for (std::int64_t t = 0; t < picks; ++t) {
    const double left = pool - marked - as_double(t);
    if (left <= 0) return 0.0;
    p *= left / (pool - as_double(t));
  }
  return p;
}

double expected_holders_reached(const model::MoeSpec& moe, std::int64_t holders) {
  MOEPLAN_CHECK(holders >= 1 && moe.num_experts % holders == 0, "holders split the experts evenly");
  const double experts = as_double(moe.num_experts);
  std::int64_t groups = moe.num_expert_groups.value_or(1);
  std::int64_t chosen = moe.topk_groups.value_or(groups);
  // Groups that straddle holders bound nothing this formula can count: priced unlimited.
  if (groups % holders != 0 && holders % groups != 0) groups = chosen = 1;
  // A holder has whole groups (groups % holders == 0) or a part of one.
  const std::int64_t groups_per_holder = groups % holders == 0 ? groups / holders : 1;
  const double experts_per_share = groups % holders == 0 ? experts / as_double(groups) : experts / as_double(holders);
  const double pool = as_double(chosen) * experts / as_double(groups);  // the chosen groups' experts
  // A holder is reached unless the token's k experts, drawn from the pool, miss
  // the share it holds of the i chosen groups it has.
  double reached = 0;
  for (std::int64_t i = 1; i <= std::min(groups_per_holder, chosen); ++i)
    reached += hypergeometric(groups, groups_per_holder, chosen, i) *
               (1.0 - miss_probability(pool, as_double(i) * experts_per_share, moe.top_k));
  return as_double(holders) * reached;
}

DeepepBuffers deepep_buffers(const model::MoeSpec& moe, const GroupShape& ep, double tokens_per_rank,
                             double token_bytes) {
  const std::int64_t nodes = ep.size / ep.ranks_per_node;
  const double distinct_ranks = expected_holders_reached(moe, ep.size);
  DeepepBuffers out;
  if (nodes == 1) {
    // DeepEP's intranode kernels: one copy per destination GPU, over NVLink.
    out.network_bytes = tokens_per_rank * distinct_ranks * token_bytes;
    return out;
  }
  out.network_bytes = tokens_per_rank * expected_holders_reached(moe, nodes) * token_bytes;
  out.nvlink_bytes = tokens_per_rank * as_double(nodes) * distinct_ranks * token_bytes;
  return out;
}

void check_deepep(const model::ScenarioSpec& s, const GroupShape& ep, std::int64_t etp) {
  check_flex(s, ep, etp, "deepep");
  const model::ClusterSpec& c = s.cluster;
  if (c.link_domain() != c.gpus_per_node)
    refuse("a multi-node NVLink domain is Megatron-Core's HybridEP case (schedule.moe_dispatcher hybridep); "
           "DeepEP's normal kernels forward within an 8-GPU node");
  const bool one_node = ep.ranks_per_node >= ep.size;
  if (one_node && ep.size > kDeepepNvlPeers)
    refuse(fmt::format("{} ranks of the EP group on one node: DeepEP's kernels join at most {} over NVLink", ep.size,
                       kDeepepNvlPeers));
  if (!one_node && (ep.ranks_per_node != kDeepepNvlPeers || ep.size % kDeepepNvlPeers != 0))
    refuse(fmt::format("the EP group spans nodes with {} of its ranks on a node; DeepEP's internode kernels take "
                       "every {} consecutive ranks of the group as one node's (order the mapping so that ep fills "
                       "nodes)",
                       ep.ranks_per_node, kDeepepNvlPeers));
}

void check_hybridep(const model::ScenarioSpec& s, const GroupShape& ep, std::int64_t etp) {
  check_flex(s, ep, etp, "hybridep");
  // HybridEP takes group.size() / NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN
  // domains and asserts that it divides (Megatron-Core fused_a2a.py,
  // _hybrid_ep_num_nodes): every NVLink domain holds the same share of the group.
  if (ep.ranks_per_node < ep.size && ep.size % ep.ranks_per_node != 0)
    refuse(fmt::format("the EP group of {} spans NVLink domains with {} of its ranks in one: HybridEP needs the "
                       "same number of the group's ranks in every domain (order the mapping so that ep fills them)",
                       ep.size, ep.ranks_per_node),
           "hybridep");
}

Milliseconds deepep_dispatch_time(const CostModel& costs, const GroupShape& ep, const DeepepBuffers& buffers) {
  const CommLines lines = costs.lines_for(model::OpClass::A2A, ep);
  double ms = lines.main.predict_ms(buffers.network_bytes);
  if (lines.node_part) ms = std::max(ms, lines.node_part->predict_ms(buffers.nvlink_bytes));
  return Milliseconds{ms};
}

}  // namespace moeplan::cost
