#include <moeplan/sim/engine.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <queue>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/portable_math.hpp>

namespace moeplan::sim {
namespace {

using dag::DispatchPolicy;
using dag::ResourceId;
using dag::TaskId;

// Moving a task's end when its rate changes: lazy deletion. The new end is
// pushed with the task's next version and the old event is skipped when it
// surfaces. An indexed heap would move the event in place, but each move is a
// sift either way, and here a rate change touches few tasks (the compute tasks
// of one rank, the transfers of one link component), so stale events stay a
// small share of the heap (Timeline::retimed_events counts them) while the
// common path, a task that is never retimed, keeps a plain binary heap of
// 24-byte events.
struct Event {
  double time;
  std::uint64_t sequence;
  TaskId task;
  std::uint32_t version;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : sequence > o.sequence; }
};

// Priority pool key: higher priority first, then lower task id (issue order).
std::uint64_t pool_key(std::int32_t priority, TaskId task) {
  const std::uint64_t inverted = static_cast<std::uint64_t>(0x7FFFFFFFLL - static_cast<std::int64_t>(priority));
  return (inverted << 32) | task;
}

// A running task whose rate can change: compute under overlap slowdown, or a
// transfer on shared links. `remaining` is work (ms at rate 1) for compute
// and size units for a transfer; the end is updated + remaining / rate.
struct Active {
  double remaining = 0;
  double rate = 0;
  double updated = 0;
  double end = 0;
  double max_rate = 0;     // a transfer's rate when alone: size / (duration - latency)
  bool transfer = false;   // on Shared resources
  bool comm = false;       // communication slowed beside compute (overlap_comm_slowdown)
  bool streaming = false;  // a transfer past its latency
  std::uint32_t mark = 0;  // component walk stamp
};

class Run {
 public:
  Run(const dag::TaskGraph& g, const EngineOptions& options) : g_(g), options_(options) {
    check_options();
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
    // Shared resources keep no queue: they take every ready task.
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
    std::int32_t max_rank = 0;
    for (const dag::Resource& res : g.resources()) {
      max_rank = std::max(max_rank, res.rank);
      has_shared_ = has_shared_ || res.policy == DispatchPolicy::Shared;
    }
    slowdown_ = options_.overlap_compute_slowdown;
    comm_slowdown_ = options_.overlap_comm_slowdown;
    track_compute_ = slowdown_ != 1.0;
    track_comm_ = comm_slowdown_ != 1.0;
    fluid_ = track_compute_ || track_comm_ || has_shared_;
    if (fluid_) {
      version_.assign(n, 0);
      slot_of_.assign(n, kNoSlot);
      const std::size_t ranks = static_cast<std::size_t>(max_rank) + 1;
      comm_running_.assign(ranks, 0);
      compute_running_.resize(track_compute_ ? ranks : 0);
      compute_count_.assign(track_comm_ ? ranks : 0, 0);
      comm_active_.resize(track_comm_ ? ranks : 0);
      link_flows_.resize(has_shared_ ? r : 0);
      link_mark_.assign(has_shared_ ? r : 0, 0);
    }
  }

  Timeline run() {
    for (TaskId t = 0; t < g_.size(); ++t)
      if (remaining_[t] == 0) make_ready(t, 0.0);
    dispatch(0.0);
    while (!events_.empty()) {
      const double now = events_.top().time;
      while (!events_.empty() && events_.top().time == now) {
        const Event e = events_.top();
        events_.pop();
        if (fluid_ && e.version != version_[e.task]) continue;  // moved: a later event stands for it
        on_event(e.task, now);
      }
      dispatch(now);
    }
    if (finished_ != g_.size()) report_deadlock();
    timeline_.engine_bytes = state_bytes();
    return std::move(timeline_);
  }

 private:
  static constexpr std::uint32_t kNoSlot = std::numeric_limits<std::uint32_t>::max();

  void check_options() const {
    const double s = options_.overlap_compute_slowdown;
    if (!std::isfinite(s) || s < 1.0)
      throw Error(ErrorKind::Input, fmt::format("{} must be finite and >= 1 (1: overlap is free)", s),
                  "overlap_compute_slowdown");
    const double c = options_.overlap_comm_slowdown;
    if (!std::isfinite(c) || c < 1.0)
      throw Error(ErrorKind::Input, fmt::format("{} must be finite and >= 1 (1: overlap is free)", c),
                  "overlap_comm_slowdown");
    const double cv = options_.compute_jitter_cv;
    if (!std::isfinite(cv) || cv < 0)
      throw Error(ErrorKind::Input, fmt::format("{} must be finite and >= 0", cv), "compute_jitter_cv");
    for (double f : options_.rank_compute_slowdown)
      if (!std::isfinite(f) || f <= 0)
        throw Error(ErrorKind::Input, fmt::format("{} must be finite and > 0", f), "rank_compute_slowdown");
  }

  bool shared(ResourceId res) const { return g_.resources()[res].policy == DispatchPolicy::Shared; }
  std::int32_t rank_of(TaskId t) const { return g_.resources()[g_.resources(t).front()].rank; }

  void make_ready(TaskId t, double now) {
    for (ResourceId res : g_.resources(t)) {
      const DispatchPolicy policy = g_.resources()[res].policy;
      if (policy == DispatchPolicy::Shared) {
        take(t, now);  // a shared link never makes a task wait
        continue;
      }
      if (policy == DispatchPolicy::Priority) pools_[res].push(pool_key(g_.priority(t), t));
      touch(res);
    }
  }

  void touch(ResourceId res) {
    if (!dirty_[res]) {
      dirty_[res] = true;
      dirty_list_.push_back(res);
    }
  }

  void dispatch(double now) {
    // Picking can start zero-length tasks whose completion lands at `now`;
    // the main loop handles those events before time moves on.
    for (std::size_t i = 0; i < dirty_list_.size(); ++i) {
      const ResourceId res = dirty_list_[i];
      dirty_[res] = false;
      if (busy_[res]) continue;
      if (auto t = pick(res)) {
        busy_[res] = true;
        take(*t, now);
      }
    }
    dirty_list_.clear();
  }

  std::optional<TaskId> pick(ResourceId res) {
    if (g_.resources()[res].policy == DispatchPolicy::InOrder) {
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

  // One member resource holds t; the last one starts it.
  void take(TaskId t, double now) {
    if (++committed_[t] < g_.resources(t).size()) return;  // waits for the other members
    start(t, now);
  }

  void push(TaskId t, double time) {
    events_.push(Event{time, sequence_++, t, fluid_ ? version_[t] : 0});
    peak_events_ = std::max(peak_events_, events_.size());
  }

  bool on_shared(TaskId t) const {
    if (!has_shared_) return false;
    for (ResourceId res : g_.resources(t))
      if (shared(res)) return true;
    return false;
  }

  double compute_work(TaskId t) const {
    double work = g_.duration_ms(t);
    const std::size_t rank = static_cast<std::size_t>(rank_of(t));
    if (rank < options_.rank_compute_slowdown.size()) work *= options_.rank_compute_slowdown[rank];
    if (options_.compute_jitter_cv > 0) work *= compute_jitter_factor(options_.jitter_seed, t, options_.compute_jitter_cv);
    return work;
  }

  void start(TaskId t, double now) {
    timeline_.start_ms[t] = now;
    timeline_.start_order[t] = started_++;
    const bool transfer = on_shared(t);
    const bool compute = g_.kind(t) == dag::TaskKind::Compute && !transfer;
    if (transfer) {
      Active& a = activate(t, now);
      a.transfer = true;
      const double streaming_ms = g_.duration_ms(t) - g_.latency_ms(t);
      a.remaining = streaming_ms > 0 ? g_.size(t) : 0.0;
      a.max_rate = streaming_ms > 0 ? g_.size(t) / streaming_ms : 0.0;
      a.end = now + g_.latency_ms(t);  // the latency event starts the streaming
      push(t, a.end);
    } else if (compute && track_compute_) {
      Active& a = activate(t, now);
      a.remaining = compute_work(t);
      a.rate = comm_running_[static_cast<std::size_t>(rank_of(t))] > 0 ? 1.0 / slowdown_ : 1.0;
      a.end = now + a.remaining / a.rate;
      compute_running_[static_cast<std::size_t>(rank_of(t))].push_back(t);
      push(t, a.end);
    } else if (!compute && track_comm_) {
      Active& a = activate(t, now);
      a.comm = true;
      a.remaining = g_.duration_ms(t);
      a.rate = comm_rate(t);
      a.end = now + a.remaining / a.rate;
      for (std::int32_t rank : ranks_of(t)) comm_active_[static_cast<std::size_t>(rank)].push_back(t);
      push(t, a.end);
    } else {
      push(t, now + (compute ? compute_work(t) : g_.duration_ms(t)));
    }
    if (compute && track_comm_) count_compute(t, now, +1);
    if (fluid_ && g_.kind(t) == dag::TaskKind::Communication) count_comm(t, now, +1);
  }

  // The distinct ranks of a task's resources (ranks_scratch_).
  const std::vector<std::int32_t>& ranks_of(TaskId t) {
    ranks_scratch_.clear();
    for (ResourceId res : g_.resources(t)) ranks_scratch_.push_back(g_.resources()[res].rank);
    std::sort(ranks_scratch_.begin(), ranks_scratch_.end());
    ranks_scratch_.erase(std::unique(ranks_scratch_.begin(), ranks_scratch_.end()), ranks_scratch_.end());
    return ranks_scratch_;
  }

  // A communication task runs slowed while compute runs on any of its ranks:
  // a collective moves at its slowest member's pace.
  double comm_rate(TaskId t) const {
    for (ResourceId res : g_.resources(t))
      if (compute_count_[static_cast<std::size_t>(g_.resources()[res].rank)] > 0) return 1.0 / comm_slowdown_;
    return 1.0;
  }

  // A compute task starts (+1) or ends (-1) on its rank; when the rank's
  // count leaves or reaches 0, the communication running there is retimed.
  void count_compute(TaskId t, double now, int delta) {
    const std::size_t rank = static_cast<std::size_t>(rank_of(t));
    std::uint32_t& count = compute_count_[rank];
    const bool was_busy = count > 0;
    count = delta > 0 ? count + 1 : count - 1;
    if (was_busy == (count > 0)) return;
    for (TaskId c : comm_active_[rank]) {
      Active& a = active_[slot_of_[c]];
      const double rate = comm_rate(c);
      if (a.end <= now || a.rate == rate) continue;  // ends at this instant, or unchanged
      settle(a, now);
      a.rate = rate;
      reschedule(c, a, now);
    }
  }

  Active& activate(TaskId t, double now) {
    std::uint32_t slot;
    if (free_slots_.empty()) {
      slot = static_cast<std::uint32_t>(active_.size());
      active_.emplace_back();
    } else {
      slot = free_slots_.back();
      free_slots_.pop_back();
      active_[slot] = Active{};
    }
    slot_of_[t] = slot;
    active_[slot].updated = now;
    return active_[slot];
  }

  // A communication task starts (+1) or ends (-1) on each rank it holds a
  // resource of; a rank whose count leaves or reaches 0 retimes its compute.
  void count_comm(TaskId t, double now, int delta) {
    for (std::int32_t rank : ranks_of(t)) {
      std::uint32_t& count = comm_running_[static_cast<std::size_t>(rank)];
      const bool was_overlapped = count > 0;
      count = delta > 0 ? count + 1 : count - 1;
      if (track_compute_ && was_overlapped != (count > 0))
        retime_compute(static_cast<std::size_t>(rank), now, count > 0 ? 1.0 / slowdown_ : 1.0);
    }
  }

  // Work done so far at the old rate; the end is then moved for the new one.
  static void settle(Active& a, double now) {
    a.remaining = std::max(0.0, a.remaining - (now - a.updated) * a.rate);
    a.updated = now;
  }

  void reschedule(TaskId t, Active& a, double now) {
    a.end = a.remaining > 0 ? now + a.remaining / a.rate : now;
    ++version_[t];
    ++timeline_.retimed_events;
    push(t, a.end);
  }

  void retime_compute(std::size_t rank, double now, double rate) {
    for (TaskId t : compute_running_[rank]) {
      Active& a = active_[slot_of_[t]];
      if (a.end <= now) continue;  // it ends at this instant: its event stands
      settle(a, now);
      a.rate = rate;
      reschedule(t, a, now);
    }
  }

  void on_event(TaskId t, double now) {
    if (fluid_ && slot_of_[t] != kNoSlot) {
      Active& a = active_[slot_of_[t]];
      if (a.transfer && !a.streaming) {
        begin_streaming(t, a, now);
        return;
      }
    }
    finish(t, now);
  }

  void begin_streaming(TaskId t, Active& a, double now) {
    a.updated = now;
    if (a.remaining <= 0) {  // all latency: nothing to stream, no link to leave
      finish(t, now);
      return;
    }
    a.streaming = true;
    links_scratch_.clear();
    for (ResourceId res : g_.resources(t))
      if (shared(res)) {
        link_flows_[res].push_back(t);
        links_scratch_.push_back(res);
      }
    rebalance(links_scratch_, now);
  }

  void finish(TaskId t, double now) {
    ++finished_;
    timeline_.end_ms[t] = now;
    timeline_.makespan_ms = std::max(timeline_.makespan_ms, now);
    if (fluid_) release(t, now);
    for (ResourceId res : g_.resources(t)) {
      if (has_shared_ && shared(res)) continue;
      busy_[res] = false;
      touch(res);
    }
    const dag::CsrGraph& succ = g_.successors_graph();
    for (auto e : boost::make_iterator_range(out_edges(t, succ))) {
      const TaskId s = target(e, succ);
      if (--remaining_[s] == 0) make_ready(s, now);
    }
  }

  // Undoes what start() and begin_streaming() registered for t.
  void release(TaskId t, double now) {
    const std::uint32_t slot = slot_of_[t];
    if (slot != kNoSlot) {
      const Active a = active_[slot];
      slot_of_[t] = kNoSlot;
      free_slots_.push_back(slot);
      if (a.transfer && a.streaming) {
        links_scratch_.clear();
        for (ResourceId res : g_.resources(t))
          if (shared(res)) {
            std::vector<TaskId>& flows = link_flows_[res];
            flows.erase(std::find(flows.begin(), flows.end(), t));
            links_scratch_.push_back(res);
          }
        rebalance(links_scratch_, now);
      } else if (a.comm) {
        for (std::int32_t rank : ranks_of(t)) {
          std::vector<TaskId>& running = comm_active_[static_cast<std::size_t>(rank)];
          running.erase(std::find(running.begin(), running.end(), t));
        }
      } else if (!a.transfer) {
        std::vector<TaskId>& running = compute_running_[static_cast<std::size_t>(rank_of(t))];
        running.erase(std::find(running.begin(), running.end(), t));
      }
    }
    if (track_comm_ && g_.kind(t) == dag::TaskKind::Compute && !on_shared(t)) count_compute(t, now, -1);
    if (g_.kind(t) == dag::TaskKind::Communication) count_comm(t, now, -1);
  }

  // Max-min fair rates (progressive filling, Bertsekas & Gallager, "Data
  // Networks", section 6.5.2) for the transfers of the shared links connected
  // to `seeds`: raise every rate together; a link that fills freezes its
  // transfers at its equal share, a transfer that reaches its own rate
  // (max_rate) freezes there; repeat with what is left.
  void rebalance(const std::vector<ResourceId>& seeds, double now) {
    ++mark_;
    component_links_.clear();
    component_flows_.clear();
    for (ResourceId res : seeds)
      if (link_mark_[res] != mark_) {
        link_mark_[res] = mark_;
        component_links_.push_back(res);
      }
    for (std::size_t i = 0; i < component_links_.size(); ++i)
      for (TaskId f : link_flows_[component_links_[i]]) {
        Active& a = active_[slot_of_[f]];
        if (a.mark == mark_) continue;
        a.mark = mark_;
        component_flows_.push_back(f);
        for (ResourceId res : g_.resources(f))
          if (shared(res) && link_mark_[res] != mark_) {
            link_mark_[res] = mark_;
            component_links_.push_back(res);
          }
      }
    std::sort(component_flows_.begin(), component_flows_.end());
    std::sort(component_links_.begin(), component_links_.end());
    fill_rates();
    for (std::size_t i = 0; i < component_flows_.size(); ++i) {
      const TaskId f = component_flows_[i];
      Active& a = active_[slot_of_[f]];
      if (a.rate == new_rates_[i]) continue;  // unchanged: its end stands
      settle(a, now);
      a.rate = new_rates_[i];
      reschedule(f, a, now);
    }
  }

  // Progressive filling over component_links_ / component_flows_ into new_rates_.
  void fill_rates() {
    const std::size_t nf = component_flows_.size();
    new_rates_.assign(nf, 0.0);
    std::vector<bool> frozen(nf, false);
    link_left_.clear();
    link_count_.clear();
    for (ResourceId res : component_links_) {
      link_left_.push_back(g_.resources()[res].capacity);
      link_count_.push_back(static_cast<std::uint32_t>(link_flows_[res].size()));
    }
    auto link_index = [&](ResourceId res) {
      return static_cast<std::size_t>(std::lower_bound(component_links_.begin(), component_links_.end(), res) -
                                      component_links_.begin());
    };
    std::size_t left = nf;
    std::vector<std::size_t> newly;
    while (left > 0) {
      double level = std::numeric_limits<double>::infinity();
      for (std::size_t l = 0; l < component_links_.size(); ++l)
        if (link_count_[l] > 0) level = std::min(level, link_left_[l] / link_count_[l]);
      for (std::size_t i = 0; i < nf; ++i)
        if (!frozen[i]) level = std::min(level, active_[slot_of_[component_flows_[i]]].max_rate);
      if (!(level > 0))
        throw_runtime_error(fmt::format("shared links left no bandwidth for transfer '{}'",
                                        g_.name(component_flows_.front())));
      newly.clear();
      for (std::size_t i = 0; i < nf; ++i) {
        if (frozen[i]) continue;
        const TaskId f = component_flows_[i];
        bool freeze = active_[slot_of_[f]].max_rate <= level;
        for (ResourceId res : g_.resources(f)) {
          if (freeze) break;
          if (!shared(res)) continue;
          const std::size_t l = link_index(res);
          freeze = link_left_[l] / link_count_[l] <= level;
        }
        if (freeze) newly.push_back(i);
      }
      for (std::size_t i : newly) {
        frozen[i] = true;
        new_rates_[i] = std::min(level, active_[slot_of_[component_flows_[i]]].max_rate);
      }
      for (std::size_t i : newly)
        for (ResourceId res : g_.resources(component_flows_[i]))
          if (shared(res)) {
            const std::size_t l = link_index(res);
            link_left_[l] = std::max(0.0, link_left_[l] - new_rates_[i]);
            --link_count_[l];
          }
      left -= newly.size();
    }
  }

  std::size_t state_bytes() const {
    std::size_t bytes = (timeline_.start_ms.capacity() + timeline_.end_ms.capacity()) * sizeof(double) +
                        (timeline_.start_order.capacity() + remaining_.capacity() + committed_.capacity() +
                         queue_offsets_.capacity() + queue_.capacity() + head_.capacity() + version_.capacity() +
                         slot_of_.capacity() + comm_running_.capacity() + compute_count_.capacity()) *
                            sizeof(std::uint32_t) +
                        (busy_.capacity() + dirty_.capacity()) / 8 + dirty_list_.capacity() * sizeof(ResourceId) +
                        pools_.capacity() * sizeof(pools_[0]) + peak_events_ * sizeof(Event) +
                        active_.capacity() * sizeof(Active) +
                        (compute_running_.capacity() + link_flows_.capacity() + comm_active_.capacity()) *
                            sizeof(std::vector<TaskId>);
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

  // Changing rates (allocated only when the run has any: fluid_).
  bool has_shared_ = false;
  bool track_compute_ = false;
  bool track_comm_ = false;
  bool fluid_ = false;
  double slowdown_ = 1.0;
  double comm_slowdown_ = 1.0;
  std::vector<std::uint32_t> version_;               // per task: the version its live event carries
  std::vector<std::uint32_t> slot_of_;               // per task: its Active slot while it runs, else kNoSlot
  std::vector<Active> active_;                       // running tasks whose rate can change
  std::vector<std::uint32_t> free_slots_;
  std::vector<std::uint32_t> comm_running_;          // per rank: communication tasks running
  std::vector<std::vector<TaskId>> compute_running_;  // per rank: compute tasks running
  std::vector<std::uint32_t> compute_count_;          // per rank: compute tasks running (overlap_comm_slowdown)
  std::vector<std::vector<TaskId>> comm_active_;      // per rank: communication slowed beside its compute
  std::vector<std::vector<TaskId>> link_flows_;       // per shared resource: transfers streaming on it
  std::vector<std::uint32_t> link_mark_;
  std::uint32_t mark_ = 0;
  std::vector<std::int32_t> ranks_scratch_;
  std::vector<ResourceId> links_scratch_;
  std::vector<ResourceId> component_links_;
  std::vector<TaskId> component_flows_;
  std::vector<double> new_rates_;
  std::vector<double> link_left_;
  std::vector<std::uint32_t> link_count_;
};

}  // namespace

double compute_jitter_factor(std::uint64_t seed, dag::TaskId task, double cv) {
  if (cv <= 0) return 1.0;
  // A stream of its own per (seed, task). z: the Irwin-Hall sum of 12 uniforms
  // minus 6 (mean 0, variance 12 x 1/12 = 1, tails cut at 6 sigma), so only
  // additions and the portable exp/log enter: the same factor on every
  // machine. A lognormal exp(mu + sigma z) has mean exp(mu + sigma^2 / 2) and
  // coefficient of variation sqrt(exp(sigma^2) - 1): sigma^2 = ln(1 + cv^2)
  // and mu = -sigma^2 / 2 give mean 1 and the asked cv (with Irwin-Hall's z
  // the mean is off by under 1e-5 at cv 0.2: E[exp(sigma z)] =
  // (sinh(sigma/2) / (sigma/2))^12 against exp(sigma^2 / 2)).
  std::uint64_t state = seed;
  state = splitmix64(state) ^ static_cast<std::uint64_t>(task);
  double sum = 0;
  for (int i = 0; i < 12; ++i) sum += unit_uniform(splitmix64(state));
  const double z = sum - 6.0;
  const double sigma2 = portable_log(1.0 + cv * cv);
  return portable_exp(std::sqrt(sigma2) * z - 0.5 * sigma2);
}

Timeline simulate(const dag::TaskGraph& graph, const EngineOptions& options) { return Run(graph, options).run(); }

}  // namespace moeplan::sim
