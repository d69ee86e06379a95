#include <moeplan/sim/engine.hpp>

#include <algorithm>
#include <queue>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::sim {
namespace {

using dag::ResourceId;
using dag::TaskId;

struct Event {
  double time;
  std::uint64_t sequence;
  TaskId task;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : sequence > o.sequence; }
};

// Priority pool key: higher priority first, then lower task id (issue order).
std::uint64_t pool_key(std::int32_t priority, TaskId task) {
  const std::uint64_t inverted = static_cast<std::uint64_t>(0x7FFFFFFFLL - static_cast<std::int64_t>(priority));
  return (inverted << 32) | task;
}

class Run {
 public:
  Run(const dag::TaskGraph& g, const EngineOptions& options) : g_(g), options_(options) {
    const std::size_t n = g.size();
    const std::size_t r = g.resources().size();
    timeline_.start_ms.assign(n, 0.0);
    timeline_.end_ms.assign(n, 0.0);
    timeline_.start_order.assign(n, 0);
    remaining_.assign(n, 0);
    committed_.assign(n, 0);
    busy_.assign(r, false);
    dirty_.assign(r, false);
    pools_.resize(r);
    // In-order queues as one CSR: tasks of each resource in issue (id) order.
    queue_offsets_.assign(r + 1, 0);
    for (TaskId t = 0; t < n; ++t)
      for (ResourceId res : g.resources(t)) ++queue_offsets_[res + 1];
    for (std::size_t i = 0; i < r; ++i) queue_offsets_[i + 1] += queue_offsets_[i];
    queue_.resize(queue_offsets_[r]);
    head_.assign(queue_offsets_.begin(), queue_offsets_.end() - 1);
    std::vector<std::uint32_t> fill(queue_offsets_.begin(), queue_offsets_.end() - 1);
    for (TaskId t = 0; t < n; ++t)
      for (ResourceId res : g.resources(t)) queue_[fill[res]++] = t;
    const dag::CsrGraph& pred = g.predecessors_graph();
    for (TaskId t = 0; t < n; ++t) remaining_[t] = static_cast<std::uint32_t>(out_degree(t, pred));
  }

  Timeline run() {
    for (TaskId t = 0; t < g_.size(); ++t)
      if (remaining_[t] == 0) make_ready(t);
    dispatch(0.0);
    while (!events_.empty()) {
      const double now = events_.top().time;
      while (!events_.empty() && events_.top().time == now) {
        const TaskId t = events_.top().task;
        events_.pop();
        finish(t, now);
      }
      dispatch(now);
    }
    if (finished_ != g_.size()) report_deadlock();
    timeline_.engine_bytes = state_bytes();
    return std::move(timeline_);
  }

 private:
  void make_ready(TaskId t) {
    for (ResourceId res : g_.resources(t)) {
      if (g_.resources()[res].policy == dag::DispatchPolicy::Priority) pools_[res].push(pool_key(g_.priority(t), t));
      touch(res);
    }
  }

  void touch(ResourceId res) {
    if (!dirty_[res]) {
      dirty_[res] = true;
      dirty_list_.push_back(res);
    }
  }

  void finish(TaskId t, double now) {
    ++finished_;
    for (ResourceId res : g_.resources(t)) {
      busy_[res] = false;
      touch(res);
    }
    const dag::CsrGraph& succ = g_.successors_graph();
    for (auto e : boost::make_iterator_range(out_edges(t, succ))) {
      const TaskId s = target(e, succ);
      if (--remaining_[s] == 0) make_ready(s);
    }
    (void)now;
  }

  void dispatch(double now) {
    // Picking can start zero-length tasks whose completion lands at `now`;
    // the main loop handles those events before time moves on.
    for (std::size_t i = 0; i < dirty_list_.size(); ++i) {
      const ResourceId res = dirty_list_[i];
      dirty_[res] = false;
      if (busy_[res]) continue;
      if (auto t = pick(res)) commit(res, *t, now);
    }
    dirty_list_.clear();
  }

  std::optional<TaskId> pick(ResourceId res) {
    if (g_.resources()[res].policy == dag::DispatchPolicy::InOrder) {
      if (head_[res] == queue_offsets_[res + 1]) return std::nullopt;
      const TaskId t = queue_[head_[res]];
      if (remaining_[t] != 0) return std::nullopt;  // a not-ready head blocks the stream
      ++head_[res];
      return t;
    }
    auto& pool = pools_[res];
    if (pool.empty()) return std::nullopt;
    const TaskId t = static_cast<TaskId>(pool.top() & 0xFFFFFFFFu);
    pool.pop();
    return t;
  }

  void commit(ResourceId res, TaskId t, double now) {
    busy_[res] = true;
    if (++committed_[t] < g_.resources(t).size()) return;  // waits for the other members
    double duration = g_.duration_ms(t);
    if (g_.kind(t) == dag::TaskKind::Compute) {
      const std::size_t rank = static_cast<std::size_t>(g_.resources()[g_.resources(t).front()].rank);
      if (rank < options_.rank_compute_slowdown.size()) duration *= options_.rank_compute_slowdown[rank];
    }
    timeline_.start_ms[t] = now;
    timeline_.end_ms[t] = now + duration;
    timeline_.start_order[t] = started_++;
    timeline_.makespan_ms = std::max(timeline_.makespan_ms, now + duration);
    events_.push(Event{now + duration, sequence_++, t});
    peak_events_ = std::max(peak_events_, events_.size());
  }

  std::size_t state_bytes() const {
    std::size_t bytes = (timeline_.start_ms.capacity() + timeline_.end_ms.capacity()) * sizeof(double) +
                        (timeline_.start_order.capacity() + remaining_.capacity() + committed_.capacity() +
                         queue_offsets_.capacity() + queue_.capacity() + head_.capacity()) *
                            sizeof(std::uint32_t) +
                        (busy_.capacity() + dirty_.capacity()) / 8 + dirty_list_.capacity() * sizeof(ResourceId) +
                        pools_.capacity() * sizeof(pools_[0]) + peak_events_ * sizeof(Event);
    return bytes;
  }

  [[noreturn]] void report_deadlock() const {
    for (TaskId t = 0; t < g_.size(); ++t)
      if (remaining_[t] == 0 && committed_[t] > 0 && committed_[t] < g_.resources(t).size())
        throw_runtime_error(
            fmt::format("deadlock: collective '{}' holds {} of its {} resources and waits for the "
                        "rest, which wait for other tasks (issue orders differ between members?)",
                        g_.name(t), committed_[t], g_.resources(t).size()));
    for (TaskId t = 0; t < g_.size(); ++t)
      if (remaining_[t] == 0 && committed_[t] == 0)
        throw_runtime_error(fmt::format("deadlock: task '{}' is ready but never picked", g_.name(t)));
    throw_runtime_error("deadlock: tasks remain that can never start");
  }

  const dag::TaskGraph& g_;
  const EngineOptions& options_;
  Timeline timeline_;
  std::vector<std::uint32_t> remaining_;  // dependencies not yet ended
  std::vector<std::uint32_t> committed_;  // member resources holding the task
  std::vector<bool> busy_;
  std::vector<bool> dirty_;
  std::vector<ResourceId> dirty_list_;
  std::vector<std::uint32_t> queue_offsets_;
  std::vector<TaskId> queue_;
  std::vector<std::uint32_t> head_;
  std::vector<std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>>> pools_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t sequence_ = 0;
  std::uint32_t started_ = 0;
  std::size_t peak_events_ = 0;
  std::size_t finished_ = 0;
};

}  // namespace

Timeline simulate(const dag::TaskGraph& graph, const EngineOptions& options) { return Run(graph, options).run(); }

}  // namespace moeplan::sim
