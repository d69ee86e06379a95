#include <moeplan/plan/candidate_run.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/plan/search_record.hpp>

namespace moeplan::plan {
namespace {

// Two formulations of one time (a plan's figure and its run again) agree to
// rounding: anything more is a bug, never drawn.
constexpr double kSameTimeTolerance = 1e-9;

bool same_time(double a, double b) { return std::abs(a - b) <= kSameTimeTolerance * std::max(std::abs(a), std::abs(b)); }

}  // namespace

CandidateRun run_candidate(const ScenarioRun& run, const PlanResult& result, const Candidate& candidate) {
  return run.family().run_candidate(run, result, candidate);
}

std::optional<BaselineRun> run_baseline(const ScenarioRun& run, const PlanResult& result) {
  return run.family().run_baseline(run, result);
}

PlanRuns run_plan_again(const ScenarioRun& run, const PlanResult& r, const std::optional<model::PlanSpec>& plan_file) {
  PlanRuns out;
  out.chosen = r.chosen;
  if (plan_file) {
    out.chosen.schedule = plan_file->schedule;
    out.chosen.knobs = plan_file->knobs;
  }
  out.chosen_run = run_candidate(run, r, out.chosen);
  const double chosen_ms = out.chosen_run.timeline.makespan_ms;
  if (plan_file) {
    if (!same_time(chosen_ms, plan_file->iteration_ms))
      out.notes.push_back(fmt::format("the plan file says {:.3f} ms per iteration; its knobs simulate to {:.3f} ms now "
                                      "(the scenario or its cost profile changed since it was written)",
                                      plan_file->iteration_ms, chosen_ms));
    const SearchRecord& record = *r.search;
    if (out.chosen.schedule != r.chosen.schedule || knobs_text(out.chosen.knobs) != knobs_text(r.chosen.knobs))
      out.notes.push_back(fmt::format("planning the scenario again chooses {} ({}) at {:.3f} ms; the plan file's {} "
                                      "({}) is drawn as chosen",
                                      r.chosen.schedule, record.knobs_words(r.chosen.knobs), r.chosen.iteration_ms,
                                      out.chosen.schedule, record.knobs_words(out.chosen.knobs)));
  } else {
    MOEPLAN_CHECK(same_time(chosen_ms, r.chosen.iteration_ms),
                  fmt::format("the chosen candidate runs again in {} ms, not the plan's {} ms", chosen_ms,
                              r.chosen.iteration_ms));
  }
  out.baseline = run_baseline(run, r);
  if (out.baseline) {
    const Baseline& figure = r.baselines.front();
    MOEPLAN_CHECK(same_time(out.baseline->run.timeline.makespan_ms, figure.iteration_ms),
                  fmt::format("baseline {} runs again in {} ms, not the plan's {} ms", figure.name,
                              out.baseline->run.timeline.makespan_ms, figure.iteration_ms));
  }
  return out;
}

}  // namespace moeplan::plan
