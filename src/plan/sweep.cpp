#include <moeplan/plan/sweep.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/plan/flowmoe_planner.hpp>
#include <moeplan/plan/foldmoe_planner.hpp>
#include <moeplan/plan/fsmoe_planner.hpp>
#include <moeplan/sched/flowmoe.hpp>
#include <moeplan/sched/foldmoe.hpp>
#include <moeplan/sched/fsmoe.hpp>

namespace moeplan::plan {

const std::vector<std::string>& family_schedules(const std::string& family) {
  if (family == "foldmoe") return sched::foldmoe_schedules();
  if (family == "fsmoe") return sched::fsmoe_schedules();
  if (family == "flowmoe") return sched::flowmoe_schedules();
  if (family == "folding") {
    static const std::vector<std::string> none{"none"};  // Megatron's default: no overlap schedule
    return none;
  }
  throw Error(ErrorKind::Input, fmt::format("the {} schedules are not available yet", family), "schedule.family");
}

std::vector<Evaluation> evaluate_point(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                       const std::vector<std::string>& requested) {
  const std::vector<std::string>& names = requested.empty() ? family_schedules(s.schedule.family) : requested;
  if (s.schedule.family == "fsmoe") return plan_fsmoe(s, costs, names).schedules;
  if (s.schedule.family == "flowmoe") {
    std::vector<Evaluation> out;
    for (const FlowMoeChoice& c : plan_flowmoe(s, costs, names).schedules) out.push_back(c.best);
    return out;
  }
  std::vector<Evaluation> out;
  for (const ScheduleChoice& c : plan_foldmoe(s, costs, names).schedules) out.push_back(c.best);
  return out;
}

}  // namespace moeplan::plan
