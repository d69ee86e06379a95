#pragma once
// Output formats of a simulated timeline, one writer each behind one
// interface (STYLE.md rule 6): Chrome Trace Event JSON for Perfetto and
// chrome://tracing, and an SVG Gantt chart for people who would rather look.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::output {

/// @brief Turns a graph and its timeline into the text of one output format.
class TimelineWriter {
 public:
  /// `ranks`: the ranks to draw (any order, repeats ignored); empty: every rank.
  explicit TimelineWriter(std::vector<std::int32_t> ranks = {});
  virtual ~TimelineWriter() = default;
  virtual std::string write(const dag::TaskGraph& graph, const sim::Timeline& timeline) const = 0;

 protected:
  /// Per resource of `graph`: whether its rank is drawn.
  std::vector<bool> shown_resources(const dag::TaskGraph& graph) const;

 private:
  std::vector<std::int32_t> ranks_;  // sorted, unique; empty: all
};

/// Chrome Trace Event format: pid = rank, tid = resource, one complete ("X")
/// event per (task, resource of a drawn rank) with args saying what the task
/// is (trace_args); process and thread names as metadata events; ts and dur
/// in microseconds.
class ChromeTraceWriter final : public TimelineWriter {
 public:
  using TimelineWriter::TimelineWriter;
  /// Also write every dependency between drawn tasks as a flow event pair
  /// (Perfetto draws an arrow): "s" inside the earlier task (args.from = its
  /// id), "f" binding to the later one (args.to); both with id = the edge's
  /// index. For measured traces, where a reader checks them (execute --trace).
  ChromeTraceWriter& with_dependencies(bool on = true) {
    dependencies_ = on;
    return *this;
  }
  std::string write(const dag::TaskGraph& graph, const sim::Timeline& timeline) const override;

 private:
  bool dependencies_ = false;
};

/// SVG Gantt chart (src/io/svg_gantt_writer.cpp): a title (scenario,
/// schedule, iteration time), one lane per resource of a drawn rank (grey
/// where idle, so bubbles show), one rectangle per task coloured by operation
/// class and labelled with its name where it fits, a time axis in ms with
/// round ticks (io::axis_ticks), a dashed forward/backward divider where the
/// phases do not interleave (else backward tasks are drawn lighter), and a
/// legend of the operation classes that appear.
class SvgGanttWriter final : public TimelineWriter {
 public:
  using TimelineWriter::TimelineWriter;
  /// The title line: "SCENARIO · SCHEDULE · iteration T ms", T the timeline's makespan.
  SvgGanttWriter& with_caption(std::string scenario, std::string schedule) {
    scenario_ = std::move(scenario);
    schedule_ = std::move(schedule);
    return *this;
  }
  /// One lane per rank, named "stage N", holding that rank's streams as rows
  /// (a pipeline's ranks are its stages: plan::price_mapping's graph).
  SvgGanttWriter& with_stage_lanes(bool on = true) {
    stage_lanes_ = on;
    return *this;
  }
  std::string write(const dag::TaskGraph& graph, const sim::Timeline& timeline) const override;

 private:
  std::string scenario_;
  std::string schedule_;
  bool stage_lanes_ = false;
};

/// The writer for a file name: ".svg" -> SVG, anything else -> Chrome trace.
std::unique_ptr<TimelineWriter> writer_for(const std::string& path, std::vector<std::int32_t> ranks = {});

/// What a trace event says about task t, as the members of a JSON object
/// (without braces): the DAG's own labels, nothing invented. `task` (id),
/// `kind` (compute, communication), `op`, `flops` (compute) or `bytes`
/// (communication) and `size` (the same number: what the cost model priced),
/// `group` (ranks in the collective; 1 for local work), `members` (resources
/// the task holds: 1, or the members of a multi-rank collective), `layer`,
/// `micro_batch` (or chunk, slice; -1: none), `phase`, `priority`, and `tags`
/// when the task has any.
std::string trace_args(const dag::TaskGraph& graph, dag::TaskId t);

/// XML text escaping (&, <, >, ", ').
std::string xml_escape(std::string_view text);

}  // namespace moeplan::output
