#include <moeplan/plan/sweep.hpp>

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/families.hpp>
#include <moeplan/plan/flowmoe_planner.hpp>
#include <moeplan/plan/foldmoe_planner.hpp>
#include <moeplan/plan/folding.hpp>
#include <moeplan/plan/fsmoe_planner.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/sched/flowmoe.hpp>
#include <moeplan/sched/foldmoe.hpp>
#include <moeplan/sched/fsmoe.hpp>

namespace moeplan::plan {

const std::vector<std::string>& family_schedules(const std::string& family) { return model::family_schedules(family); }

namespace {

std::vector<PointResult> folding_point(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                       const std::vector<std::string>& modes, unsigned threads) {
  std::vector<PointResult> out;
  for (const std::string& mode : modes) {
    const std::vector<FoldingResult> ranked = search_mappings(s, costs, mode, threads);
    PointResult r;
    r.evaluation.schedule = mode;
    r.evaluation.iteration_ms = std::numeric_limits<double>::quiet_NaN();  // no mapping fits
    if (!ranked.empty() && ranked.front().fits) {
      const FoldingResult& best = ranked.front();
      r.evaluation.iteration_ms = best.iteration_ms;
      r.evaluation.degree = best.config.pp;
      r.evaluation.bubble_ms = best.breakdown.pp_bubble_ms;
      r.knobs.degree_forward = r.knobs.degree_backward = best.config.pp;
      r.knobs.parallelism = best.config.parallel_spec();
      r.knobs.micro_batch_size = best.config.micro_batch;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<PointResult> evaluate_point(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                        const std::vector<std::string>& requested, unsigned threads) {
  const std::vector<std::string>& all = family_schedules(s.schedule.family);
  std::vector<std::string> names;
  if (requested.empty()) {
    for (const std::string& name : all)
      if (!ruled_out_schedule(s, name)) names.push_back(name);
  } else {
    for (const std::string& name : requested) {
      if (std::find(all.begin(), all.end(), name) == all.end())
        throw Error(ErrorKind::Input,
                    fmt::format("{} is not a schedule of scenario {} (family {}: {})", quoted_for_error(name), s.name,
                                s.schedule.family, model::join_names(all)),
                    "schedules");
      if (auto why = ruled_out_schedule(s, name))
        throw Error(ErrorKind::Input, fmt::format("scenario {}: {}", s.name, *why), "schedules");
      names.push_back(name);
    }
  }
  std::vector<PointResult> out;
  if (s.schedule.family == "folding") return folding_point(s, costs, names, threads);
  if (s.schedule.family == "fsmoe") {
    const FsMoePlan plan = plan_fsmoe(s, costs, names, threads);
    for (std::size_t i = 0; i < plan.schedules.size(); ++i) {
      const sched::FsMoeKnobs& k = plan.knobs[i];
      PointResult r{plan.schedules[i], {}};
      r.knobs.degree_forward = k.degree_forward;
      r.knobs.degree_backward = k.degree_backward;
      // fsmoe_knobs gives the partition to the schedules that use it (fsmoe, fsmoe-no-iio) only.
      for (double b : k.grad_during_moe_bytes) r.knobs.grad_partition_bytes += b;
      for (double b : k.grad_during_dense_bytes) r.knobs.grad_partition_bytes += b;
      out.push_back(std::move(r));
    }
    return out;
  }
  if (s.schedule.family == "flowmoe") {
    for (const FlowMoeChoice& c : plan_flowmoe(s, costs, names, {}, threads).schedules) {
      PointResult r{c.best, {}};
      r.knobs.degree_forward = r.knobs.degree_backward = c.best.degree;
      r.knobs.ar_chunk_bytes = c.ar_chunk_bytes;
      out.push_back(std::move(r));
    }
    return out;
  }
  for (const ScheduleChoice& c : plan_foldmoe(s, costs, names, 32, threads).schedules) {
    PointResult r{c.best, {}};
    r.knobs.degree_forward = r.knobs.degree_backward = c.best.degree;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace moeplan::plan
