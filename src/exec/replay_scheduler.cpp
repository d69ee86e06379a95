#include "replay_scheduler.hpp"

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::exec {

ReplayScheduler::ReplayScheduler(const dag::TaskGraph& graph)
    : graph_(graph), queue_(graph.resources().size()), deps_total_(graph.size(), 0) {
  for (dag::TaskId t = 0; t < graph.size(); ++t) {
    for (dag::ResourceId r : graph.resources(t)) queue_[r].push_back(t);
    deps_total_[t] = static_cast<std::uint32_t>(out_degree(t, graph.predecessors_graph()));
  }
}

std::vector<Assignment> ReplayScheduler::start() {
  const std::size_t n = graph_.size();
  deps_left_ = deps_total_;
  taken_.assign(n, 0);
  done_.assign(n, 0);
  taken_at_.clear();
  for (const auto& q : queue_) taken_at_.emplace_back(q.size(), false);
  head_.assign(queue_.size(), 0);
  holding_.assign(queue_.size(), -1);
  ended_ = running_ = 0;
  std::vector<Assignment> out;
  for (dag::ResourceId r = 0; r < queue_.size(); ++r) pick(r, out);
  return out;
}

void ReplayScheduler::take(dag::ResourceId r, std::size_t position, std::vector<Assignment>& out) {
  const dag::TaskId t = queue_[r][position];
  taken_at_[r][position] = true;
  while (head_[r] < queue_[r].size() && taken_at_[r][head_[r]]) ++head_[r];
  if (graph_.resources()[r].policy != dag::DispatchPolicy::Shared) holding_[r] = t;
  if (++taken_[t] == graph_.resources(t).size()) ++running_;
  out.push_back({r, t});
}

void ReplayScheduler::pick(dag::ResourceId r, std::vector<Assignment>& out) {
  const std::vector<dag::TaskId>& q = queue_[r];
  switch (graph_.resources()[r].policy) {
    case dag::DispatchPolicy::InOrder:
      if (holding_[r] < 0 && head_[r] < q.size() && ready(q[head_[r]])) take(r, head_[r], out);
      return;
    case dag::DispatchPolicy::Priority: {
      if (holding_[r] >= 0) return;
      std::size_t best = q.size();
      for (std::size_t i = head_[r]; i < q.size(); ++i)
        if (!taken_at_[r][i] && ready(q[i]) && (best == q.size() || graph_.priority(q[i]) > graph_.priority(q[best])))
          best = i;  // strictly higher only: ties keep the earlier issue
      if (best < q.size()) take(r, best, out);
      return;
    }
    case dag::DispatchPolicy::Shared:
      for (std::size_t i = head_[r]; i < q.size(); ++i)
        if (!taken_at_[r][i] && ready(q[i])) take(r, i, out);
      return;
  }
}

std::vector<Assignment> ReplayScheduler::member_done(dag::TaskId t) {
  MOEPLAN_CHECK(done_[t] < taken_[t], "a member finished a task it did not take");
  std::vector<Assignment> out;
  if (++done_[t] < graph_.resources(t).size()) return out;
  ++ended_;
  --running_;
  for (dag::ResourceId r : graph_.resources(t))
    if (holding_[r] == static_cast<std::int64_t>(t)) holding_[r] = -1;
  for (dag::TaskId s : boost::make_iterator_range(adjacent_vertices(t, graph_.successors_graph()))) --deps_left_[s];
  // Every free resource picks after the event, in resource order (as the
  // engine's picks after an instant's events).
  for (dag::ResourceId r = 0; r < queue_.size(); ++r) pick(r, out);
  return out;
}

std::string ReplayScheduler::stuck_description() const {
  for (dag::TaskId t = 0; t < graph_.size(); ++t) {
    if (taken_[t] == 0 || taken_[t] == graph_.resources(t).size()) continue;
    std::string holders;
    for (dag::ResourceId r : graph_.resources(t)) {
      const dag::Resource& res = graph_.resources()[r];
      const std::int64_t held = holding_[r];
      holders += fmt::format("{}rank {} {} holds {}", holders.empty() ? "" : "; ", res.rank, res.name,
                             held < 0 ? std::string("nothing")
                                      : fmt::format("task {} ('{}')", held, graph_.name(static_cast<dag::TaskId>(held))));
    }
    return fmt::format("collective task {} ('{}') was taken by {} of its {} members and can never start ({})", t,
                       graph_.name(t), taken_[t], graph_.resources(t).size(), holders);
  }
  return fmt::format("{} of {} tasks ended and none can start", ended_, graph_.size());
}

}  // namespace moeplan::exec
