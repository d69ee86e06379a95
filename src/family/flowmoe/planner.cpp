#include <moeplan/family/flowmoe/planner.hpp>

#include <algorithm>

#include <moeplan/core/parallel.hpp>

namespace moeplan::flowmoe {

const std::vector<std::int64_t>& flowmoe_degrees() {
  static const std::vector<std::int64_t> degrees{1, 2, 4, 8, 16};
  return degrees;
}

std::pair<std::int64_t, std::int64_t> chunk_search_space(const model::ScenarioSpec& s) {
  const auto largest = static_cast<std::int64_t>(flowmoe::flowmoe_block_allreduce_bytes(s));
  return {std::min(kMinChunkBytes, std::max<std::int64_t>(largest, 1)), std::max<std::int64_t>(largest, 1)};
}

flowmoe::FlowMoeKnobs flowmoe_knobs(const model::ScenarioSpec& s, const std::string& schedule, std::int64_t degree,
                                  std::int64_t chunk_bytes) {
  flowmoe::FlowMoeKnobs k;
  k.schedule = schedule;
  k.degree = degree;
  k.ar_chunk_bytes = std::max<std::int64_t>(chunk_bytes, 1);
  k.multi_rank = s.schedule.multi_rank;
  return k;
}

FlowMoePlan plan_flowmoe(const model::ScenarioSpec& s, const cost::CostModel& costs,
                         const std::vector<std::string>& schedules, const BayesSettings& settings, unsigned threads,
                         Progress* progress) {
  const auto [lo, hi] = chunk_search_space(s);
  // One job per (schedule, R); each tunes Sp on its own (BO is sequential).
  struct Job {
    std::size_t schedule;
    std::int64_t degree;
  };
  std::vector<Job> jobs;
  for (std::size_t i = 0; i < schedules.size(); ++i) {
    if (schedules[i] == "none") {
      jobs.push_back({i, 1});
      continue;
    }
    if (s.schedule.degree) {
      jobs.push_back({i, *s.schedule.degree});  // the scenario fixes R
      continue;
    }
    for (std::int64_t r : flowmoe_degrees()) jobs.push_back({i, r});
  }
  std::vector<FlowMoeChoice> tried(jobs.size());
  if (progress != nullptr) progress->add_total(jobs.size());
  const unsigned started = parallel_for(jobs.size(), threads, [&](std::size_t j) {
    const std::string& name = schedules[jobs[j].schedule];
    const std::int64_t r = jobs[j].degree;
    const bool chunked = name == "flowmoe" || name == "flowmoe-ar";
    FlowMoeChoice& c = tried[j];
    std::int64_t chunk = hi;
    if (chunked) {
      if (s.schedule.ar_chunk_bytes) {
        chunk = *s.schedule.ar_chunk_bytes;  // the scenario fixes Sp
      } else {
        c.tuning = tune_bayesian(
            [&](std::int64_t bytes) {
              return plan::evaluate(flowmoe::build_flowmoe(s, costs, flowmoe_knobs(s, name, r, bytes))).iteration_ms;
            },
            lo, hi, settings);
        chunk = c.tuning.best_bytes;
      }
    }
    c.best = plan::evaluate(flowmoe::build_flowmoe(s, costs, flowmoe_knobs(s, name, r, chunk)));
    c.ar_chunk_bytes = chunked ? chunk : 0;
    if (progress != nullptr) progress->advance();
  });
  // Jobs are in schedule order, R ascending: ties keep the smaller R.
  FlowMoePlan out;
  out.threads.record(threads, jobs.size(), started);
  out.schedules.resize(schedules.size());
  std::vector<bool> seen(schedules.size(), false);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    FlowMoeChoice& best = out.schedules[jobs[j].schedule];
    if (!seen[jobs[j].schedule] || tried[j].best.iteration_ms < best.best.iteration_ms) {
      best = std::move(tried[j]);
      seen[jobs[j].schedule] = true;
    }
  }
  for (std::size_t i = 1; i < out.schedules.size(); ++i)
    if (out.schedules[i].best.iteration_ms < out.schedules[out.best].best.iteration_ms) out.best = i;
  return out;
}

}  // namespace moeplan::flowmoe
