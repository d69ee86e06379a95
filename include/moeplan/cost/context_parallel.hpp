#pragma once
// The context-parallel exchange of one attention block (docs/cost-model.md,
// "Context parallelism"): Megatron-Core's --cp-comm-type p2p (a ring of K/V
// blocks beside the attention core), a2a (Ulysses: heads exchanged for the
// sequence before the core, back after), allgather (K/V gathered before the
// core) and a2a+p2p (a2a inside groups of hierarchical_cp_sizes[0], the ring
// across them). What is not hidden under the core is exposed, per direction.

#include <cstdint>
#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief One CP group's shapes: the whole group, a ring neighbour pair, and
/// for a2a+p2p the a2a group (the first members) and a ring pair across groups.
struct CpGroups {
  GroupShape group;
  GroupShape pair;
  GroupShape a2a_group;
  GroupShape outer_pair;
};

/// The shapes of CP group `ranks` (its members in rank order): the a2a group
/// is its first `a2a_size` members and the outer pair its members 0 and a2a_size.
CpGroups cp_groups(const std::vector<std::int64_t>& ranks, std::int64_t a2a_size, const model::ClusterSpec& cluster);

/// @brief What one block's CP exchange leaves exposed, per micro-batch (ms).
struct CpExchange {
  double forward_ms = 0;
  double backward_ms = 0;
};

/// @brief One block's attention tensors on one rank, bytes.
struct CpTensors {
  double q_bytes = 0;   ///< the rank's queries (its tokens, its heads)
  double kv_bytes = 0;  ///< its keys and values
  double o_bytes = 0;   ///< the core's output
};

/// The exposed exchange of `parallel.cp_comm_type` with cp = `parallel.cp`
/// for tensors `t` and an attention core of `core_ms` per direction-forward
/// (the backward core is twice it). p2p: cp - 1 ring steps, each a K/V block
/// beside a cp-th of the core (backward: K/V and their gradients beside two
/// cp-ths), exposed where the step's transfer outlasts its compute; a2a: the
/// Q, K, V exchange before the core and the output's after (backward: the
/// same volumes of gradients), in line; allgather: K/V gathered before the
/// core (backward: gathered again, and their gradients reduce-scattered), in
/// line; a2a+p2p: the a2a over the a2a group, then the ring over cp / a2a_size.
CpExchange cp_exchange(const CostModel& costs, const model::ParallelSpec& parallel, const CpTensors& t, double core_ms,
                       const CpGroups& groups);

}  // namespace moeplan::cost
