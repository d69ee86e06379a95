#include <moeplan/plan/foldmoe_planner.hpp>

#include <algorithm>

#include <moeplan/sched/foldmoe.hpp>

namespace moeplan::plan {

FoldMoePlan plan_foldmoe(const model::ScenarioSpec& s, const cost::CostModel& costs,
                         const std::vector<std::string>& schedules, std::int64_t max_degree) {
  const std::int64_t tokens = s.workload.seq_len / (s.parallel.sequence_parallel ? s.parallel.tp : 1);
  const std::int64_t limit = std::max<std::int64_t>(1, std::min(max_degree, tokens));
  FoldMoePlan out;
  for (const std::string& name : schedules) {
    ScheduleChoice choice;
    const std::int64_t top = name == "none" ? 1 : limit;
    bool first = true;
    for (std::int64_t d = 1; d <= top; ++d) {
      const sched::BuiltSchedule built = sched::build_foldmoe(s, costs, {name, d});
      const Evaluation e = evaluate(built);
      choice.tried.emplace_back(d, e.iteration_ms);
      if (first || e.iteration_ms < choice.best.iteration_ms) {  // ties keep the smaller degree
        choice.best = e;
        choice.slicing_tokens = built.slicing_tokens;
        first = false;
      }
    }
    if (name == "none") out.none_ms = choice.best.iteration_ms;
    if (name == "tutel") out.tutel_ms = choice.best.iteration_ms;
    out.schedules.push_back(std::move(choice));
  }
  for (std::size_t i = 1; i < out.schedules.size(); ++i)
    if (out.schedules[i].best.iteration_ms < out.schedules[out.best].best.iteration_ms) out.best = i;
  return out;
}

}  // namespace moeplan::plan
