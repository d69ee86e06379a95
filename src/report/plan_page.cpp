// What the report of a plan shows, rendered from the plan, its explanation,
// its search record's picture and the chosen candidate and baseline as
// plan::run_plan_again ran them.

#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/version.hpp>
#include <moeplan/output/plan_report.hpp>
#include <moeplan/output/timeline_layout.hpp>
#include <moeplan/report/html_report.hpp>

namespace moeplan::report {
namespace {

// A split's parts sum to its iteration to rounding: anything more is a bug, never drawn.
constexpr double kSameTimeTolerance = 1e-9;

io::Json split_to_json(const IterationSplit& s, const std::string& role) {
  io::Json j = io::Json::object();
  j.set("name", s.name);
  j.set("role", role);
  j.set("iteration_ms", s.iteration_ms);
  j.set("compute_ms", s.compute_ms);
  j.set("exposed_comm_ms", s.exposed_comm_ms);
  j.set("idle_ms", s.idle_ms);
  return j;
}

io::Json ops_json() {
  io::Json ops = io::Json::array();
  for (int i = 0; i < model::kOpClassCount; ++i) {
    const auto op = static_cast<model::OpClass>(i);
    io::Json j = io::Json::object();
    j.set("name", model::to_string(op));
    j.set("colour", output::op_colour(op));
    ops.push(std::move(j));
  }
  return ops;
}

io::Json timeline_entry(const plan::CandidateRun& c, const std::string& label, const std::string& knobs,
                        bool stages) {
  io::Json j = timeline_to_json(c.built.graph, c.timeline, report_ranks(c.built.graph, c.timeline));
  j.set("label", label);
  j.set("schedule", c.built.schedule);
  j.set("knobs", knobs);
  j.set("stages", stages);
  return j;
}

}  // namespace

IterationSplit split_of(const plan::SearchBar& bar) {
  IterationSplit s{bar.name, bar.iteration_ms, bar.compute_ms, bar.exposed_comm_ms, 0};
  const double idle = bar.iteration_ms - bar.compute_ms - bar.exposed_comm_ms;
  MOEPLAN_CHECK(idle >= -kSameTimeTolerance * bar.iteration_ms,
                fmt::format("{}: compute {} ms and exposed communication {} ms exceed the iteration's {} ms", bar.name,
                            bar.compute_ms, bar.exposed_comm_ms, bar.iteration_ms));
  s.idle_ms = std::max(0.0, idle);
  return s;
}

io::Json plan_report_data(const model::ScenarioSpec& scenario, const plan::PlanResult& r, const plan::Explanation& why,
                          const plan::PlanRuns& runs, const PlanReportInput& input) {
  const plan::SearchRecord& record = *r.search;
  const plan::SearchPicture picture = record.picture(scenario, r, runs.chosen);
  io::Json notes = io::Json::array();
  for (const std::string& n : r.notes) notes.push(n);
  for (const std::string& n : runs.notes) notes.push(n);
  io::Json timelines = io::Json::array();
  timelines.push(timeline_entry(runs.chosen_run, "chosen", record.knobs_words(runs.chosen.knobs), picture.stage_lanes));
  if (runs.baseline)
    timelines.push(timeline_entry(runs.baseline->run, "baseline", record.knobs_words(runs.baseline->knobs),
                                  picture.stage_lanes));
  else
    notes.push("no baseline timeline: none of the plan's baselines ran (a mapping search's: no coupled mapping fits in memory)");
  io::Json bars = io::Json::array();
  for (const plan::SearchBar& bar : picture.bars) bars.push(split_to_json(split_of(bar), bar.role));
  io::Json j = io::Json::object();
  j.set("kind", "plan");
  j.set("title", fmt::format("moeplan report: {}", r.scenario));
  j.set("input", input.input);
  j.set("version", std::string("moeplan ") + kVersion);
  j.set("family", r.family);
  j.set("ops", ops_json());
  j.set("plan", output::plan_to_json(r, &why));
  j.set("plan_text", output::plan_to_text(r, &why));
  j.set("notes", notes);
  j.set("timelines", timelines);
  j.set("chart", picture.chart);
  j.set("bars_by", picture.bars_by);
  j.set("bars", bars);
  if (!picture.chart_data.is_null()) j.set("chart_data", picture.chart_data);
  if (picture.memory_limit_bytes) j.set("memory_limit_bytes", *picture.memory_limit_bytes);
  return j;
}

}  // namespace moeplan::report
