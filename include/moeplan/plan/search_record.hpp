#pragma once
// A family's own record of a plan search (plan_result.hpp): it writes its
// keys of the plan's JSON and its text, answers the parts of the explanation
// only it can (knobs at the edge of its search, what bound the choice, the
// savings against its baseline), names the report's picture of the search and
// prints the plan as the family's reference system takes it (--emit). Generic
// code (the plan reporters, explain, the report page) asks the record and
// never names a family.

#include <optional>
#include <string>
#include <vector>

#include <moeplan/io/json.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/explanation.hpp>
#include <moeplan/plan/plan_result.hpp>

namespace moeplan::plan {

class ScenarioRun;

/// @brief One bar of the report: a schedule's or a mapping's iteration split.
struct SearchBar {
  std::string name;
  double iteration_ms = 0;
  double compute_ms = 0;       ///< compute busy time (of the critical rank, or the stage)
  double exposed_comm_ms = 0;  ///< communication not under compute
  std::string role;            ///< "chosen", "baseline" or ""
};

/// @brief What the report draws of a search besides the timelines.
struct SearchPicture {
  /// The chart report.js draws (docs/report.md): "degree-curve",
  /// "sp-curve", "gradient-partition", "mfu-memory", or "" for none.
  std::string chart;
  std::string bars_by = "schedule";  ///< "schedule" or "mapping": what a bar stands for
  std::vector<SearchBar> bars;
  bool stage_lanes = false;  ///< timeline ranks are pipeline stages
  io::Json chart_data;       ///< what the chart needs beyond the plan's JSON (null: nothing)
  std::optional<double> memory_limit_bytes;  ///< usable memory per GPU, for a memory axis
};

/// @brief A family's record of its search.
class SearchRecord {
 public:
  virtual ~SearchRecord() = default;
  /// The family's own keys of the plan's JSON, after the shared ones (docs/plan.schema.json).
  virtual void write_json(io::Json& doc, const PlanResult& result) const = 0;
  /// The plan as a person reads it: `moeplan plan`'s text before its "why" paragraph.
  virtual std::string text(const PlanResult& result) const = 0;

  /// Every schedule's evaluation at its best knobs, in the search's order (empty: a mapping search).
  virtual std::vector<const Evaluation*> evaluations() const { return {}; }
  /// The evaluation of `schedule` among evaluations(), or nullptr.
  const Evaluation* evaluation(const std::string& schedule) const;

  /// The chosen knobs at an end of the range the search tried.
  virtual std::vector<EdgeKnob> edge_knobs(const model::ScenarioSpec& scenario, const PlanResult& result) const;
  /// What bound the choice. Default: the schedules share the scenario's
  /// mapping, so memory binds when it does not fit.
  virtual BindingConstraint binding_constraint(const model::ScenarioSpec& scenario, const PlanResult& result) const;
  /// What the chosen candidate saves against the baseline. Default: against
  /// schedule none, in the evaluations' terms.
  virtual Savings savings(const PlanResult& result) const;
  /// The iteration time of `candidate` at its knobs on `run`'s cost model (the
  /// explanation's sensitivity runs). Default: the family's run_candidate.
  virtual double evaluate_candidate(const ScenarioRun& run, const PlanResult& result, const Candidate& candidate) const;

  /// A candidate's knobs in a few words, as the report labels a timeline.
  virtual std::string knobs_words(const model::PlanKnobs& knobs) const;
  /// The report's picture of the search, `chosen` drawn as the choice.
  virtual SearchPicture picture(const model::ScenarioSpec& scenario, const PlanResult& result,
                                const Candidate& chosen) const = 0;

  /// The form --emit prints: "knobs" (key=value, the overlap system's
  /// arguments) or "megatron" (Megatron-LM's arguments).
  virtual std::string emit_format() const = 0;
  /// The chosen plan in emit_format().
  virtual std::string emit(const PlanResult& result, const model::ScenarioSpec& scenario) const = 0;
  /// Said after the scenario's family when --emit asks for another form ("(a joint plan)").
  virtual std::string emit_refusal_note() const { return ""; }
};

/// A candidate's knobs in a few words ("d 6", "d 2 Sp 4194304", "tp 1 cp 4 pp 4 vpp 1 ep 2 etp 1 mb 1"),
/// as the "why" paragraph names runners-up.
std::string knobs_text(const model::PlanKnobs& knobs);

/// The bars of every evaluation of `record`, named "schedule (d N)", the chosen
/// schedule and none marked: the overlap families' report bars.
std::vector<SearchBar> evaluation_bars(const SearchRecord& record, const std::string& chosen_schedule);

}  // namespace moeplan::plan
