#pragma once
// A pipeline's times without its task graph: the searches price thousands of
// mappings, and building and running each one's 1F1B graph was most of their
// time. When nothing slows overlapping work (the engine's fixed-rate mode:
// every task runs for its duration), the engine starts a task at the later of
// its inputs' ends and the end of the task before it on its stream, so the
// pipeline's times follow from one pass over each stage's order, with the
// same sums (end = start + duration) and maxima the engine computes: the
// same doubles. tests/unit/plan/pipeline_times_test.cpp holds it to the
// engine's run of build_pipeline's graph, bit for bit.

#include <cstdint>
#include <optional>

#include <moeplan/sched/pipeline.hpp>

namespace moeplan::plan {

/// @brief What run_pipeline reads of a pipeline's run.
struct PipelineTimes {
  double makespan_ms = 0;  ///< the engine's Timeline::makespan_ms
  /// Stage 0's compute busy time, as sim::summarize reports it (the union of
  /// its compute intervals, sim::covered_ms).
  double stage0_compute_busy_ms = 0;
};

/// The times of `spec`'s pipeline when every task runs for its duration
/// (overlap slowdowns 1, no rank factors, no jitter: the caller's to know).
/// check_pipeline's errors first. Empty when the graph would come within a
/// factor of 2 of the spec's task limit: build_pipeline decides there, and
/// refuses with its own error. Every step runs: a pipeline's makespan is the
/// longest of its paths, a maximum of lines in the micro-batch count, so
/// extrapolating the makespans of short runs can miss a steeper path that
/// overtakes later (docs/performance.md, issue 31); steady_pipeline_times
/// extrapolates only from a state that repeats.
std::optional<PipelineTimes> pipeline_times(const sched::PipelineSpec& spec);

/// @brief pipeline_times, from a shorter run where the pipeline is periodic.
struct SteadyPipelineTimes {
  PipelineTimes times;
  /// True when the times were extrapolated from a run of
  /// simulated_micro_batches; false when every step ran.
  bool extrapolated = false;
  std::int64_t simulated_micro_batches = 0;
  int probes = 0;  ///< shorter runs tried (the last the periodic one when extrapolated)
};

/// pipeline_times without running every steady micro-batch (docs/performance.md,
/// issue 31): the recurrence runs a shorter pipeline (the same warm-up and
/// cool-down, fewer steady periods; at most half the micro-batches)
/// and checks that its steady region repeats exactly, every end of a window
/// that covers what later steps read shifted by one common period (within
/// 1e-14 relative: rounding); the skipped periods then shift every later end
/// by that period, exactly, because the recurrence only takes maxima and adds
/// fixed durations. Otherwise (a transient longer than the probes, a pipeline
/// too short to save anything) every step runs: extrapolated is false. Within
/// 1e-9 relative of pipeline_times (tests/unit/plan/pipeline_times_test.cpp);
/// the same refusals and limits.
std::optional<SteadyPipelineTimes> steady_pipeline_times(const sched::PipelineSpec& spec);

}  // namespace moeplan::plan

