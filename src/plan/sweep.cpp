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

std::vector<PointResult> evaluate_point(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                        const std::vector<std::string>& requested) {
  const std::vector<std::string>& names = requested.empty() ? family_schedules(s.schedule.family) : requested;
  std::vector<PointResult> out;
  if (s.schedule.family == "fsmoe") {
    const FsMoePlan plan = plan_fsmoe(s, costs, names);
    for (std::size_t i = 0; i < plan.schedules.size(); ++i) {
      const sched::FsMoeKnobs& k = plan.knobs[i];
      PlannedKnobs knobs{k.degree_forward, k.degree_backward, 0, 0};
      // fsmoe_knobs gives the partition to the schedules that use it (fsmoe, fsmoe-no-iio) only.
      for (double b : k.grad_during_moe_bytes) knobs.grad_partition_bytes += b;
      for (double b : k.grad_during_dense_bytes) knobs.grad_partition_bytes += b;
      out.push_back({plan.schedules[i], knobs});
    }
    return out;
  }
  if (s.schedule.family == "flowmoe") {
    for (const FlowMoeChoice& c : plan_flowmoe(s, costs, names).schedules)
      out.push_back({c.best, {c.best.degree, c.best.degree, c.ar_chunk_bytes, 0}});
    return out;
  }
  for (const ScheduleChoice& c : plan_foldmoe(s, costs, names).schedules)
    out.push_back({c.best, {c.best.degree, c.best.degree, 0, 0}});
  return out;
}

}  // namespace moeplan::plan
