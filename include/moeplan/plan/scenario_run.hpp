#pragma once
// A scenario ready to run: its cost model, the schedules of its family that a
// request names, and each schedule built at the scenario's knobs. What
// `simulate` and `plan` share, in the library so that every command (and the
// tests) runs a scenario the same way.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/folding.hpp>
#include <moeplan/plan/fsmoe_planner.hpp>
#include <moeplan/sched/schedule.hpp>

namespace moeplan::plan {

/// @brief A schedule a request names, or why it does not run for this scenario.
struct RequestedSchedule {
  std::string name;
  std::optional<std::string> skipped_because;  ///< set when "all" leaves it out
};

/// Why the scenario's own knobs rule a schedule of its family out (e.g.
/// 1a1m-uniform when schedule.slicing fixes the slices); empty when it runs.
std::optional<std::string> ruled_out_schedule(const model::ScenarioSpec& scenario, const std::string& schedule);

/// @brief A validated scenario with its cost model.
class ScenarioRun {
 public:
  /// Input error (field profile_ref) when the scenario names no cost profile.
  explicit ScenarioRun(model::ScenarioSpec spec);
  ScenarioRun(ScenarioRun&&) noexcept;
  ~ScenarioRun();

  const model::ScenarioSpec& spec() const { return spec_; }
  const cost::CostModel& costs() const { return *costs_; }

  /// "all": every schedule of the family, with those the scenario's knobs rule
  /// out marked skipped (e.g. 1a1m-uniform when schedule.slicing fixes the
  /// slices); a name: that schedule, an input error (field --schedule) when the
  /// family has no such schedule or the scenario's knobs rule it out.
  std::vector<RequestedSchedule> schedules(const std::string& requested) const;
  /// The names of schedules(requested) that run; each one left out adds
  /// "NAME skipped: WHY" to `notes` when given.
  std::vector<std::string> runnable_schedules(const std::string& requested,
                                              std::vector<std::string>* notes = nullptr) const;

  /// The schedule at the scenario's knobs; `degree` (FoldMoE d, FSMoE r of both
  /// phases, FlowMoE R) replaces the scenario's when given. Not for folding.
  sched::BuiltSchedule build(const std::string& schedule, std::optional<std::int64_t> degree = {}) const;

  /// Uneven expert load of a schedule built from this scenario: each drawn
  /// rank's own AlltoAll time over the graph's AlltoAlls (every rank of a
  /// multi-rank graph; one EP group in symmetric mode), the slowest, the
  /// dropped fraction. Empty when routing is balanced.
  std::optional<RoutingReport> routing_report(const sched::BuiltSchedule& built) const;

  /// FSMoE's closed-form plan (degrees, gradient partition), computed once.
  const FsMoePlan& fsmoe_plan() const;

  /// Bytes per GPU the scenario's own mapping needs (plan::memory_per_gpu), and
  /// whether they fit in its GPU: the same memory model for every family.
  double memory_bytes_per_gpu() const;
  bool fits_in_memory() const;

  /// Folding: the scenario's own mapping, priced as the planner prices every
  /// mapping, with its pipeline's graph and timeline when asked.
  FoldingResult price_own_mapping(FoldingTrace* trace = nullptr) const;

 private:
  model::ScenarioSpec spec_;
  std::unique_ptr<cost::CostModel> costs_;
  mutable std::unique_ptr<FsMoePlan> fsmoe_;
};

}  // namespace moeplan::plan
