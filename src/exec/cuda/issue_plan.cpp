#include "issue_plan.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/bus_factor.hpp>

namespace moeplan::exec::cuda_plan {
namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

// Per resource of the rank: its tasks (issue order), the next one to issue
// (in-order and shared), and the pool of those whose predecessors are issued
// (priority), keyed (-priority, id).
struct Queue {
  dag::DispatchPolicy policy = dag::DispatchPolicy::InOrder;
  std::vector<dag::TaskId> tasks;
  std::size_t head = 0;
  std::set<std::pair<std::int64_t, dag::TaskId>> pool;
};

class Planner {
 public:
  Planner(const dag::TaskGraph& g, std::int32_t rank) : g_(g), local_(g.size()), waiting_(g.size(), 0) {
    std::map<dag::ResourceId, std::uint32_t> queue_of;
    for (dag::TaskId t = 0; t < g.size(); ++t)
      for (dag::ResourceId r : g.resources(t))
        if (g.resources()[r].rank == rank) {
          auto [it, added] = queue_of.emplace(r, 0);
          if (added) resources_.push_back(r);
          local_[t].push_back(r);
        }
    std::sort(resources_.begin(), resources_.end());
    for (std::uint32_t i = 0; i < resources_.size(); ++i) queue_of[resources_[i]] = i;
    queues_.resize(resources_.size());
    for (std::uint32_t i = 0; i < resources_.size(); ++i) queues_[i].policy = g.resources()[resources_[i]].policy;
    queue_index_.resize(g.size());
    for (dag::TaskId t = 0; t < g.size(); ++t) {
      for (dag::ResourceId r : local_[t]) {
        queue_index_[t].push_back(queue_of[r]);
        queues_[queue_of[r]].tasks.push_back(t);
      }
      if (local_[t].empty()) continue;
      ++remaining_;
      for (auto e : boost::make_iterator_range(out_edges(t, g.predecessors_graph())))
        if (!local_[target(e, g.predecessors_graph())].empty()) ++waiting_[t];
    }
    for (dag::TaskId t = 0; t < g.size(); ++t)
      if (!local_[t].empty() && waiting_[t] == 0) became_ready(t);
    last_on_queue_.assign(queues_.size(), kNone);
    stream_of_.assign(g.size(), kNone);
  }

  IssuePlan run() {
    IssuePlan plan;
    plan.streams = resources_;
    while (remaining_ > 0) {
      const std::optional<dag::TaskId> next = pick();
      if (!next) throw Error(ErrorKind::Runtime, stuck_message());
      plan.launches.push_back(issue(*next));
      --remaining_;
    }
    return plan;
  }

 private:
  void became_ready(dag::TaskId t) {
    for (std::uint32_t q : queue_index_[t])
      if (queues_[q].policy == dag::DispatchPolicy::Priority)
        queues_[q].pool.emplace(-static_cast<std::int64_t>(g_.priority(t)), t);
  }

  // The task queue q would issue next, if any is issuable there.
  std::optional<dag::TaskId> front(std::uint32_t q) const {
    const Queue& queue = queues_[q];
    if (queue.policy == dag::DispatchPolicy::Priority) {
      if (queue.pool.empty()) return std::nullopt;
      return queue.pool.begin()->second;
    }
    if (queue.head >= queue.tasks.size()) return std::nullopt;
    const dag::TaskId t = queue.tasks[queue.head];
    if (waiting_[t] != 0) return std::nullopt;
    return t;
  }

  // The lowest-numbered task that every one of its queues would issue next.
  std::optional<dag::TaskId> pick() const {
    std::optional<dag::TaskId> best;
    for (std::uint32_t q = 0; q < queues_.size(); ++q) {
      const std::optional<dag::TaskId> t = front(q);
      if (!t || (best && *best <= *t)) continue;
      bool everywhere = true;
      for (std::uint32_t other : queue_index_[*t]) everywhere = everywhere && front(other) == t;
      if (everywhere) best = t;
    }
    return best;
  }

  Launch issue(dag::TaskId t) {
    Launch launch;
    launch.task = t;
    launch.stream = queue_index_[t].front();
    stream_of_[t] = launch.stream;
    std::set<dag::TaskId> waits;
    for (auto e : boost::make_iterator_range(out_edges(t, g_.predecessors_graph()))) {
      const dag::TaskId p = target(e, g_.predecessors_graph());
      if (!local_[p].empty() && stream_of_[p] != launch.stream) waits.insert(p);
    }
    // A task also on another stream's resource orders that resource's later tasks.
    for (std::uint32_t q : queue_index_[t]) {
      const std::uint32_t last = last_on_queue_[q];
      if (last != kNone && stream_of_[last] != launch.stream) waits.insert(last);
      last_on_queue_[q] = t;
      Queue& queue = queues_[q];
      if (queue.policy == dag::DispatchPolicy::Priority)
        queue.pool.erase({-static_cast<std::int64_t>(g_.priority(t)), t});
      else
        ++queue.head;
    }
    launch.waits.assign(waits.begin(), waits.end());
    for (auto e : boost::make_iterator_range(out_edges(t, g_.successors_graph()))) {
      const dag::TaskId s = target(e, g_.successors_graph());
      if (!local_[s].empty() && --waiting_[s] == 0) became_ready(s);
    }
    return launch;
  }

  std::string stuck_message() const {
    for (std::uint32_t q = 0; q < queues_.size(); ++q) {
      const Queue& queue = queues_[q];
      if (queue.policy != dag::DispatchPolicy::Priority && queue.head < queue.tasks.size()) {
        const dag::TaskId t = queue.tasks[queue.head];
        return fmt::format(
            "cuda backend: no launch order exists: task {} '{}' waits on resource '{}' for tasks "
            "that cannot be issued before it",
            t, g_.name(t), g_.resources()[resources_[q]].name);
      }
    }
    return "cuda backend: no launch order exists (a dependency cycle)";
  }

  const dag::TaskGraph& g_;
  std::vector<std::vector<dag::ResourceId>> local_;  // the task's resources of this rank
  std::vector<std::vector<std::uint32_t>> queue_index_;
  std::vector<std::uint32_t> waiting_;  // local predecessors not yet issued
  std::vector<dag::ResourceId> resources_;
  std::vector<Queue> queues_;
  std::vector<std::uint32_t> last_on_queue_;
  std::vector<std::uint32_t> stream_of_;
  std::size_t remaining_ = 0;
};

}  // namespace

IssuePlan make_issue_plan(const dag::TaskGraph& graph, std::int32_t rank) { return Planner(graph, rank).run(); }

double proxy_copy_bytes(const CommWork& work) {
  const int ranks = std::max(static_cast<int>(work.ranks.size()), static_cast<int>(work.priced_group));
  if (ranks <= 1) return 0;
  return work.size_bytes * cost::bus_factor(work.op, ranks);
}

}  // namespace moeplan::exec::cuda_plan
