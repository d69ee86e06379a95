#pragma once
// The engine's dispatch rules (src/sim/engine.cpp) as a state machine driven by
// real events: which task each resource takes next, given which tasks have
// ended. Not thread-safe: the host backend calls it under one lock, so that
// all members of a collective that ends are freed, and pick, in one step, as
// the engine applies all events of one instant before any resource picks.

#include <cstdint>
#include <string>
#include <vector>

#include <moeplan/dag/task_graph.hpp>

namespace moeplan::exec {

/// @brief One resource taking one task (for a collective: one member of it).
struct Assignment {
  dag::ResourceId resource = 0;
  dag::TaskId task = 0;
};

/// @brief Picks tasks by the engine's rules: InOrder = issue order, a head that
/// is not ready blocks the rest; Priority = the ready task of highest
/// priority, ties by issue order, non-preemptive; Shared = every ready task.
/// A collective holds each member resource from when it takes it until the
/// last member has finished its part.
class ReplayScheduler {
 public:
  explicit ReplayScheduler(const dag::TaskGraph& graph);

  /// A new iteration: nothing ended, nothing taken. Returns the first assignments.
  std::vector<Assignment> start();
  /// One member resource has finished its part of `task` (a compute task has
  /// one member). When it was the last, the task ends: its members are freed
  /// and every free resource picks. Returns the new assignments.
  std::vector<Assignment> member_done(dag::TaskId task);

  bool finished() const { return ended_ == graph_.size(); }
  /// Nothing runs and nothing can start (a collective taken by some members
  /// while another member holds a task that waits for it): the iteration can
  /// never end.
  bool stalled() const { return !finished() && running_ == 0; }
  /// One line naming a stuck task and who holds what, for the error.
  std::string stuck_description() const;

 private:
  void pick(dag::ResourceId r, std::vector<Assignment>& out);
  void take(dag::ResourceId r, std::size_t position, std::vector<Assignment>& out);
  bool ready(dag::TaskId t) const { return deps_left_[t] == 0; }

  const dag::TaskGraph& graph_;
  std::vector<std::vector<dag::TaskId>> queue_;  // per resource, issue order
  std::vector<std::uint32_t> deps_total_;
  // Per iteration:
  std::vector<std::uint32_t> deps_left_;
  std::vector<std::uint32_t> taken_;  // members that took the task
  std::vector<std::uint32_t> done_;   // members that finished their part
  std::vector<std::vector<bool>> taken_at_;  // per resource, per queue position
  std::vector<std::size_t> head_;            // per resource: first position not taken
  std::vector<std::int64_t> holding_;        // per resource: task held, -1 when free
  std::size_t ended_ = 0;
  std::size_t running_ = 0;  // tasks every member has taken, not ended
};

}  // namespace moeplan::exec
