#pragma once
// `moeplan report` (issue 18 item 2): one self-contained HTML page of a plan
// or a sweep, rendered from results it is given (it computes, loads and runs
// nothing). What the page shows becomes one JSON document (the plan and its
// explanation, the chosen schedule's and the baseline's timelines as
// plan::run_plan_again ran them, the bars and the family's picture its search
// record names; for a sweep, its rows); html_page() wraps it with the
// report's script and style, both inline (src/report/assets/, embedded at
// build time), so the page needs no network. docs/report.md describes the page.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/output/sweep_csv.hpp>
#include <moeplan/plan/candidate_run.hpp>
#include <moeplan/plan/explanation.hpp>
#include <moeplan/plan/plan_result.hpp>
#include <moeplan/plan/search_record.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::report {

/// A report timeline draws every rank up to this many; above, ranks 0..7 and
/// the critical rank (as a trace does beyond 64): a lane per stream of
/// hundreds of ranks would be unreadable on a page.
inline constexpr std::size_t kReportRanksAllUpTo = 8;

/// The ranks a report timeline draws, sorted.
std::vector<std::int32_t> report_ranks(const dag::TaskGraph& graph, const sim::Timeline& timeline);

/// A timeline as the page draws it: `lanes` (rank, stream) of the drawn
/// ranks in resource order; `tasks`, six numbers per (task, drawn resource):
/// lane, start_ms, end_ms, op (index into the page's ops, model::OpClass
/// order), phase (0 none, 1 forward, 2 backward), name (index into `names`);
/// `ops` (the classes drawn), `divider_ms` (output::phase_divider_ms, or null),
/// `iteration_ms` (the makespan), `ranks` and `ranks_total`.
io::Json timeline_to_json(const dag::TaskGraph& graph, const sim::Timeline& timeline,
                          const std::vector<std::int32_t>& ranks);

/// @brief One schedule's (or mapping's) iteration split three ways.
struct IterationSplit {
  std::string name;
  double iteration_ms = 0;
  double compute_ms = 0;       ///< compute busy time (of the critical rank, or the stage)
  double exposed_comm_ms = 0;  ///< communication not under compute
  double idle_ms = 0;          ///< the rest: neither computing nor communicating
};

/// A bar of the search record's picture, split: idle = iteration - compute -
/// exposed communication. A split that does not add up (idle below zero
/// beyond rounding) is an internal error.
IterationSplit split_of(const plan::SearchBar& bar);

/// @brief What the report of a plan was made from.
struct PlanReportInput {
  std::string input;  ///< as given on the command line
};

/// The page's data for a plan: `kind` "plan", `title`, `input`, `version`,
/// `ops` (name and colour of every operation class), `plan`
/// (output::plan_to_json with the explanation), `plan_text`
/// (output::plan_to_text), `notes` (the plan's, then the runs'), `timelines`
/// (the chosen candidate, then the baseline when there is one; each
/// timeline_to_json plus `label`, `schedule`, `knobs`, `stages`), `chart`,
/// `bars_by` and `bars` (the search record's picture), and the picture's
/// `chart_data` and `memory_limit_bytes` where it has them.
io::Json plan_report_data(const model::ScenarioSpec& scenario, const plan::PlanResult& result,
                          const plan::Explanation& why, const plan::PlanRuns& runs, const PlanReportInput& input);

/// The page's data for a sweep's CSV: `kind` "sweep", `title`, `input`,
/// `version`, and `sweep`: `axes` (name, values in first-seen order),
/// `scenarios`, `schedules`, `points` (distinct grid points), and `rows` as
/// columns: `point`, `scenario`, `schedule` (indices), `axes` (per axis, the
/// value index of every row), `iteration_ms`, `speedup_vs_none`,
/// `speedup_vs_tutel` (null where the CSV cell is empty).
io::Json sweep_report_data(const output::SweepTable& table, const std::string& input);

/// The HTML document: the data as JSON in a script element (every '<'
/// written \u003c, so no text in it can end the element), the report's script
/// and style inline, a Content-Security-Policy that allows no fetch at all,
/// and `title` (HTML-escaped) as the page title.
std::string html_page(const io::Json& data, const std::string& title);

}  // namespace moeplan::report
