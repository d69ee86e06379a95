#include <moeplan/family/foldmoe/planner.hpp>

#include <algorithm>

#include <moeplan/core/parallel.hpp>
#include <moeplan/family/foldmoe/builder.hpp>

namespace moeplan::foldmoe {

FoldMoePlan plan_foldmoe(const model::ScenarioSpec& s, const cost::CostModel& costs,
                         const std::vector<std::string>& schedules, std::int64_t max_degree, unsigned threads,
                         Progress* progress) {
  const std::int64_t tokens = s.workload.seq_len / (s.parallel.sequence_parallel ? s.parallel.tp : 1);
  const std::int64_t limit = std::max<std::int64_t>(1, std::min(max_degree, tokens));
  const std::vector<std::int64_t>& slicing = s.schedule.slicing_tokens;
  // The degrees each schedule tries: none has none; the scenario's slicing
  // fixes aaam's and 1a1m's; the scenario's degree fixes every other's.
  struct Job {
    std::size_t schedule;
    sched::ScheduleKnobs knobs;
  };
  std::vector<Job> jobs;
  for (std::size_t i = 0; i < schedules.size(); ++i) {
    const std::string& name = schedules[i];
    if (name == "none") {
      jobs.push_back({i, {name, 1, {}}});
    } else if (!slicing.empty() && (name == "aaam" || name == "1a1m")) {
      jobs.push_back({i, {name, static_cast<std::int64_t>(slicing.size()), slicing}});
    } else if (s.schedule.degree) {
      jobs.push_back({i, {name, *s.schedule.degree, {}}});
    } else {
      for (std::int64_t d = 1; d <= limit; ++d) jobs.push_back({i, {name, d, {}}});
    }
  }
  // The scenario's mode (schedule.mode) for every job: multi-rank graphs when asked.
  for (Job& job : jobs) job.knobs.multi_rank = s.schedule.multi_rank;
  std::vector<plan::Evaluation> evaluations(jobs.size());
  std::vector<std::vector<std::int64_t>> slicings(jobs.size());
  if (progress != nullptr) progress->add_total(jobs.size());
  const unsigned started = parallel_for(jobs.size(), threads, [&](std::size_t j) {
    const sched::BuiltSchedule built = foldmoe::build_foldmoe(s, costs, jobs[j].knobs);
    evaluations[j] = plan::evaluate(built);
    slicings[j] = built.slicing_tokens;
    if (progress != nullptr) progress->advance();
  });
  // Jobs are in schedule order, degrees ascending: ties keep the smaller degree.
  FoldMoePlan out;
  out.threads.record(threads, jobs.size(), started);
  out.schedules.resize(schedules.size());
  std::vector<bool> seen(schedules.size(), false);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    ScheduleChoice& choice = out.schedules[jobs[j].schedule];
    choice.tried.emplace_back(jobs[j].knobs.degree, evaluations[j].iteration_ms);
    if (!seen[jobs[j].schedule] || evaluations[j].iteration_ms < choice.best.iteration_ms) {
      choice.best = evaluations[j];
      choice.slicing_tokens = slicings[j];
      seen[jobs[j].schedule] = true;
    }
  }
  for (std::size_t i = 0; i < schedules.size(); ++i) {
    if (schedules[i] == "none") out.none_ms = out.schedules[i].best.iteration_ms;
    if (schedules[i] == "tutel") out.tutel_ms = out.schedules[i].best.iteration_ms;
  }
  for (std::size_t i = 1; i < out.schedules.size(); ++i)
    if (out.schedules[i].best.iteration_ms < out.schedules[out.best].best.iteration_ms) out.best = i;
  return out;
}

}  // namespace moeplan::foldmoe
