#include <moeplan/cost/context_parallel.hpp>

#include <algorithm>

#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {

double comm(const CostModel& costs, model::OpClass op, const GroupShape& g, double bytes) {
  return costs.communication(op, g, bytes).value;
}

// A ring of `size` over `pair`: size - 1 steps, each moving `bytes` beside
// `step_ms` of compute; a step's transfer hides under its own step only.
double ring_exposed(const CostModel& costs, const GroupShape& pair, std::int64_t size, double bytes, double step_ms) {
  if (size <= 1) return 0;
  const double transfer = comm(costs, model::OpClass::P2P, pair, bytes);
  return as_double(size - 1) * std::max(0.0, transfer - step_ms);
}

// Ulysses' two exchanges (Q, K, V in; the output back) over `group`: an
// AlltoAll of the rank's whole tensor each (nccl-tests' size per rank).
double heads_exchange(const CostModel& costs, const GroupShape& group, const CpTensors& t) {
  if (group.size <= 1) return 0;
  return comm(costs, model::OpClass::A2A, group, t.q_bytes + t.kv_bytes) +
         comm(costs, model::OpClass::A2A, group, t.o_bytes);
}

}  // namespace

CpGroups cp_groups(const std::vector<std::int64_t>& ranks, std::int64_t a2a_size, const model::ClusterSpec& cluster) {
  CpGroups g;
  g.group = group_shape(ranks, cluster);
  g.pair = group_shape(ranks.size() > 1 ? std::vector<std::int64_t>{ranks[0], ranks[1]} : ranks, cluster);
  const std::size_t a = static_cast<std::size_t>(
      std::clamp<std::int64_t>(a2a_size, 1, static_cast<std::int64_t>(ranks.size())));
  g.a2a_group = group_shape(std::vector<std::int64_t>(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(a)),
                            cluster);
  g.outer_pair = group_shape(a < ranks.size() ? std::vector<std::int64_t>{ranks[0], ranks[a]} : ranks, cluster);
  return g;
}

CpExchange cp_exchange(const CostModel& costs, const model::ParallelSpec& p, const CpTensors& t, double core_ms,
                       const CpGroups& g) {
  CpExchange out;
  if (p.cp <= 1) return out;
  const std::string& type = p.cp_comm_type;
  if (type == "p2p") {
    out.forward_ms = ring_exposed(costs, g.pair, p.cp, t.kv_bytes, core_ms / as_double(p.cp));
    out.backward_ms = ring_exposed(costs, g.pair, p.cp, 2.0 * t.kv_bytes, 2.0 * core_ms / as_double(p.cp));
  } else if (type == "a2a") {
    out.forward_ms = out.backward_ms = heads_exchange(costs, g.group, t);
  } else if (type == "allgather") {
    const double gathered = t.kv_bytes * as_double(p.cp);  // the AllGather's output on each rank
    out.forward_ms = comm(costs, model::OpClass::AllGather, g.group, gathered);
    out.backward_ms = out.forward_ms + comm(costs, model::OpClass::ReduceScatter, g.group, gathered);
  } else {  // a2a+p2p
    const std::int64_t a2a = p.hierarchical_cp_sizes.front();
    const std::int64_t ring = p.cp / a2a;
    const double exchange = heads_exchange(costs, g.a2a_group, t);
    // After the a2a a rank holds a2a x its tokens for 1 / a2a of its heads: the same K/V bytes.
    out.forward_ms = exchange + ring_exposed(costs, g.outer_pair, ring, t.kv_bytes, core_ms / as_double(ring));
    out.backward_ms =
        exchange + ring_exposed(costs, g.outer_pair, ring, 2.0 * t.kv_bytes, 2.0 * core_ms / as_double(ring));
  }
  return out;
}


}  // namespace moeplan::cost
