#pragma once
// How the CUDA backend launches one rank's tasks (plain C++, no CUDA: built
// and tested on every machine). CUDA launches are asynchronous: the host
// issues every task of an iteration up front into its resource's stream and
// expresses each dependency as an event wait, so the order of issue must be
// one the host can know before anything has run.
//
// The rule (docs/architecture.md, "CUDA backend"): a task can be issued once
// every predecessor of this rank has been issued. In-order and shared
// resources issue in the graph's issue order (a shared link becomes one
// stream: its concurrent transfers are serialised, an approximation); a
// priority resource issues, among its tasks whose predecessors are issued,
// the one of highest priority (ties: issue order). That is the engine's rule
// with "ready" read as "predecessors issued" instead of "predecessors ended":
// the approximation an asynchronous launcher cannot avoid.

#include <cstdint>
#include <vector>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/exec/backend.hpp>

namespace moeplan::exec::cuda_plan {

/// @brief One task as launched: on which stream, after which events.
struct Launch {
  dag::TaskId task = 0;
  std::uint32_t stream = 0;        ///< index into IssuePlan::streams
  std::vector<dag::TaskId> waits;  ///< end events to wait for: earlier tasks on other streams, ascending
};

/// @brief One rank's launches, in the order the host issues them.
struct IssuePlan {
  std::vector<dag::ResourceId> streams;  ///< the rank's resources that carry a task, ascending; one CUDA stream each
  std::vector<Launch> launches;
};

/// The tasks with a resource of `rank`, in issue order. A task on several of
/// the rank's resources is launched on the first and the others' later tasks
/// wait for it. Predecessors on other ranks are not waited for: only
/// collectives cross ranks, and a collective synchronises its members itself.
/// Runtime Error when no order exists (a cycle through in-order streams),
/// naming a stuck task.
IssuePlan make_issue_plan(const dag::TaskGraph& graph, std::int32_t rank);

/// Bytes the one-GPU proxy copies for a collective: what each rank puts on its
/// links, nccl-tests' size x bus-bandwidth factor (cost::bus_factor):
/// alltoall and allgather over n ranks (n - 1) / n of the size, allreduce 2 (n - 1) / n,
/// p2p the size; a group of one, 0. The group is the one priced
/// (CommWork::priced_group, when larger than the members held): a symmetric
/// graph holds one member of each collective, and its proxy must still move
/// what that member would (copying nothing, the first GPU run's proxies took
/// 1.3 us and measured no communication at all).
double proxy_copy_bytes(const CommWork& work);

}  // namespace moeplan::exec::cuda_plan
