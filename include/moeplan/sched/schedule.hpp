#pragma once
// What every schedule builder returns, and the names of CLI.md's schedules.
// A builder reads a validated scenario and a cost model and emits a TaskGraph;
// it never runs it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/dag/task_graph.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::sched {

/// @brief A built schedule: the graph and the knobs it was built with.
struct BuiltSchedule {
  dag::TaskGraph graph;
  std::string schedule;
  std::int64_t degree = 1;
  std::vector<std::int64_t> slicing_tokens;  ///< attention slices of one sequence, where sliced
  std::vector<double> rank_compute_slowdown; ///< per-rank compute factors for the engine (stragglers)
};

/// @brief The knobs a builder takes.
struct ScheduleKnobs {
  std::string schedule = "none";
  std::int64_t degree = 1;
};

/// Link class of a parallel group of `size` ranks spaced `stride` apart, with
/// consecutive ranks filling nodes of gpus_per_node (Megatron's rank order).
model::LinkClass group_link(std::int64_t size, std::int64_t stride, std::int64_t gpus_per_node);

}  // namespace moeplan::sched
