#pragma once
// `moeplan report` (issue 18 item 2): one self-contained HTML page of a plan
// or a sweep. The library gathers what the page shows as one JSON document
// (the plan and its explanation, the chosen schedule's and the baseline's
// timelines, the iteration of every schedule split into compute, exposed
// communication and idle, the family's own picture; for a sweep, its rows);
// html_page() wraps it with the report's script and style, both inline
// (src/report/assets/, embedded at build time), so the page needs no network.
// docs/report.md describes the page.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/sweep_csv.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/explain.hpp>
#include <moeplan/plan/folding.hpp>
#include <moeplan/plan/planner.hpp>
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
/// `ops` (the classes drawn), `divider_ms` (io::phase_divider_ms, or null),
/// `iteration_ms` (the makespan), `ranks` and `ranks_total`.
io::Json timeline_to_json(const dag::TaskGraph& graph, const sim::Timeline& timeline,
                          const std::vector<std::int32_t>& ranks);

/// @brief One schedule's (or mapping's) iteration split three ways.
struct IterationSplit {
  std::string name;
  double iteration_ms = 0;
  double compute_ms = 0;       ///< compute busy time of the critical rank
  double exposed_comm_ms = 0;  ///< communication not under compute on that rank
  double idle_ms = 0;          ///< the rest: neither computing nor communicating
};

/// An overlap schedule's split: its evaluation's compute_ms and
/// exposed_comm_ms, and idle = iteration - compute - exposed (the bubble
/// less the exposed communication). A split that does not add up (idle below
/// zero beyond rounding) is an internal error.
IterationSplit split_of(const plan::Evaluation& evaluation);

/// A folding mapping's split, from its breakdown: compute = attention +
/// MoE compute; exposed communication = AlltoAll + AllGather/ReduceScatter +
/// the optimizer's collectives (a pipeline chunk runs its layers'
/// communication in line with their compute, so none of it is hidden); idle =
/// the rest (the pipeline bubble, and compute slowed beside P2P transfers).
IterationSplit split_of(const plan::FoldingResult& mapping, const std::string& name);

/// @brief What the report of a plan was made from.
struct PlanReportInput {
  std::string input;  ///< as given on the command line
  /// When the input is a plan file: the plan it holds. Its own choice is the
  /// one drawn; the candidates, bars and explanation come from planning its
  /// scenario again, and the page notes where the two differ.
  std::optional<model::PlanSpec> plan_file;
};

/// The page's data for a plan made on `run`: `kind` "plan", `title`,
/// `input`, `version`, `ops` (name and colour of every operation class),
/// `plan` (report::plan_to_json with the explanation), `plan_text`
/// (report::plan_to_text), `notes`, `timelines` (the chosen candidate, then
/// the baseline: none, or folding's best coupled mapping, when there is one;
/// each timeline_to_json plus `label`, `schedule`, `knobs`, `stages`),
/// `bars` (IterationSplit of every schedule the search evaluated, or of the
/// best folded mappings and the best coupled one), and for folding `mappings`
/// (every mapping searched: mode, memory, MFU, iteration, fits) and
/// `memory_limit_bytes`.
io::Json plan_report_data(const plan::ScenarioRun& run, const plan::PlanResult& result,
                          const plan::Explanation& why, const PlanReportInput& input);

/// The page's data for a sweep's CSV: `kind` "sweep", `title`, `input`,
/// `version`, and `sweep`: `axes` (name, values in first-seen order),
/// `scenarios`, `schedules`, `points` (distinct grid points), and `rows` as
/// columns: `point`, `scenario`, `schedule` (indices), `axes` (per axis, the
/// value index of every row), `iteration_ms`, `speedup_vs_none`,
/// `speedup_vs_tutel` (null where the CSV cell is empty).
io::Json sweep_report_data(const io::SweepTable& table, const std::string& input);

/// The HTML document: the data as JSON in a script element (every '<'
/// written \u003c, so no text in it can end the element), the report's script
/// and style inline, a Content-Security-Policy that allows no fetch at all,
/// and `title` (HTML-escaped) as the page title.
std::string html_page(const io::Json& data, const std::string& title);

}  // namespace moeplan::report
