#pragma once
// Output formats of a simulated timeline, one writer each behind one
// interface (STYLE.md rule 6): Chrome Trace Event JSON for Perfetto and
// chrome://tracing, and an SVG Gantt chart for people who would rather look.

#include <memory>
#include <string>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::io {

/// @brief Turns a graph and its timeline into the text of one output format.
class TimelineWriter {
 public:
  virtual ~TimelineWriter() = default;
  virtual std::string write(const dag::TaskGraph& graph, const sim::Timeline& timeline) const = 0;
};

/// Chrome Trace Event format: pid = rank, tid = resource, one complete ("X")
/// event per (task, resource) with args op, size, layer, micro_batch, phase;
/// process and thread names as metadata events; ts and dur in microseconds.
class ChromeTraceWriter final : public TimelineWriter {
 public:
  std::string write(const dag::TaskGraph& graph, const sim::Timeline& timeline) const override;
};

/// SVG Gantt chart: one lane per resource (grey where idle, so bubbles show),
/// one rectangle per task coloured by operation class, a time axis in ms.
class SvgGanttWriter final : public TimelineWriter {
 public:
  std::string write(const dag::TaskGraph& graph, const sim::Timeline& timeline) const override;
};

/// The writer for a file name: ".svg" -> SVG, anything else -> Chrome trace.
std::unique_ptr<TimelineWriter> writer_for(const std::string& path);

/// XML text escaping (&, <, >, ", ').
std::string xml_escape(std::string_view text);

}  // namespace moeplan::io
