#include <moeplan/plan/planner.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/family_rules.hpp>
#include <moeplan/plan/family_registry.hpp>

namespace moeplan::plan {

PlanResult plan_scenario(const ScenarioRun& run, const PlanRequest& request) { return run.family().plan(run, request); }

std::string emit_plan(const PlanResult& result, const model::ScenarioSpec& scenario, const std::string& format) {
  const SearchRecord& record = *result.search;
  const std::string own = record.emit_format();
  if (format != own) {
    // What the family's plans are: a mapping (Megatron-LM's arguments), or an overlap schedule's knobs.
    const std::string what = format == "megatron" ? " (a mapping)" : "";
    throw Error(ErrorKind::Input,
                fmt::format("{} {}: applies to {} scenarios{}; {} is a {} scenario{}: use {} {}",
                            option_ref("request.emit"), format, model::join_names_and(families_emitting(format)),
                            what, result.scenario, scenario.schedule.family, record.emit_refusal_note(),
                            option_ref("request.emit"), own));
  }
  return record.emit(result, scenario);
}

}  // namespace moeplan::plan
