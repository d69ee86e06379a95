#pragma once
// Running a built schedule and reading off the figures every report uses.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/sched/schedule.hpp>
#include <moeplan/sim/analysis.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::plan {

/// @brief Uneven expert load, as one run priced it (docs/cost-model.md, "Uneven expert load").
struct RoutingReport {
  std::string routing;                  ///< zipf, histogram
  std::string priced;                   ///< what the graph's AlltoAlls and experts were priced at, in words
  std::vector<double> per_rank_a2a_ms;  ///< each drawn rank's own AlltoAll time, summed over the iteration
  std::int64_t slowest_rank = 0;        ///< largest per_rank_a2a_ms (lowest rank on ties)
  double dropped_token_fraction = 0;    ///< dropped slots / routed slots
};

/// @brief The simulate figures of one schedule (CLI.md `simulate` keys), in ms.
struct Evaluation {
  std::string schedule;
  std::int64_t degree = 1;
  double iteration_ms = 0;
  double forward_ms = 0;   ///< end of the last forward task
  double backward_ms = 0;  ///< iteration end minus forward end
  double compute_ms = 0;   ///< compute busy time of the critical rank
  double comm_ms = 0;      ///< communication busy time of the critical rank
  double exposed_comm_ms = 0;
  double bubble_ms = 0;
  std::int64_t tasks = 0;
  double a2a_total_ms = 0;     ///< all AlltoAll time of the critical rank
  double a2a_critical_ms = 0;  ///< AlltoAll time on the critical path (FoldMoE Fig. 11)
  /// FLOPs of the attention tasks of rank 0 (the representative rank), per
  /// phase, in all and per layer (index = layer); equal for every schedule of a
  /// scenario, since slicing changes when attention runs, not how much.
  double attention_flops_forward = 0;
  double attention_flops_backward = 0;
  std::vector<double> attention_flops_forward_per_layer;
  std::vector<double> attention_flops_backward_per_layer;
  /// When workload.routing is not balanced (set by ScenarioRun::routing_report's caller).
  std::optional<RoutingReport> routing;
};

/// @brief Seeded noise on compute work (model::ScheduleSpec's jitter fields).
struct Noise {
  double compute_jitter_cv = 0;  ///< 0: no noise
  std::int64_t seeds = 1;
  std::uint64_t first_seed = 1;
};

/// @brief The iteration over `seeds` noisy runs (seeds first_seed, first_seed + 1, ...).
struct NoiseSummary {
  std::int64_t seeds = 0;
  double compute_jitter_cv = 0;
  double mean_ms = 0;
  double p95_ms = 0;  ///< nearest rank: ceil(0.95 n)-th smallest
  double min_ms = 0;
  double max_ms = 0;
};

/// The noise a scenario asks for (its schedule.compute_jitter_cv, jitter_seeds, jitter_seed).
Noise noise_of(const model::ScenarioSpec& scenario);

/// Runs a built schedule on the engine with everything the builder asked of it
/// (per-rank compute slow-downs, the overlap slowdown) and, when given, noise
/// drawn from `seed`: the one way a built schedule is simulated.
sim::Timeline run_schedule(const sched::BuiltSchedule& built, const Noise& noise = {}, std::uint64_t seed = 1);

/// Runs the schedule once per seed of `noise` (cv > 0) and summarizes the iterations.
NoiseSummary run_with_noise(const sched::BuiltSchedule& built, const Noise& noise);

Evaluation evaluate(const sched::BuiltSchedule& built, const sim::Timeline& timeline);
Evaluation evaluate(const sched::BuiltSchedule& built);

}  // namespace moeplan::plan
