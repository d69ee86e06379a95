#pragma once
// What simulate and plan share: loading a runnable scenario and dispatching a
// schedule name to its paper's builder.

#include <memory>
#include <string>
#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/fsmoe_planner.hpp>
#include <moeplan/sched/schedule.hpp>

namespace moeplan::cli {

/// @brief A scenario with the cost model built from its profile.
struct RunnableScenario {
  model::ScenarioSpec spec;
  std::unique_ptr<cost::CostModel> costs;
  /// FSMoE's closed-form plan (degrees, gradient partition), computed once when needed.
  mutable std::unique_ptr<plan::FsMoePlan> fsmoe;
  const plan::FsMoePlan& fsmoe_plan() const;
};

/// Input error if the scenario names no cost profile.
RunnableScenario load_runnable(const std::string& scenario, const std::vector<std::string>& sets);

/// The schedules of the scenario's family, in CLI.md order.
std::vector<std::string> family_schedules(const model::ScenarioSpec& scenario);

/// "all" -> the family's schedules; a name -> that one, if the family has it.
std::vector<std::string> chosen_schedules(const model::ScenarioSpec& scenario, const std::string& requested);

/// A schedule at `degree` (FoldMoE), or at FSMoE's planned knobs with `degree`
/// (when > 0) replacing both phases' degrees.
sched::BuiltSchedule build_schedule(const RunnableScenario& run, const std::string& schedule, std::int64_t degree);

/// CLI.md `simulate` keys.
io::Json evaluation_to_json(const std::string& scenario, const plan::Evaluation& e);

}  // namespace moeplan::cli
