#pragma once
// A scenario ready to run: its cost model, its family (plan/family.hpp), the
// schedules of the family that a request names, and each schedule built at the
// scenario's knobs. What `simulate` and `plan` share, in the library so that
// every command (and the tests) runs a scenario the same way.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/family.hpp>
#include <moeplan/sched/schedule.hpp>

namespace moeplan::plan {

/// @brief A schedule a request names, or why it does not run for this scenario.
struct RequestedSchedule {
  std::string name;
  std::optional<std::string> skipped_because;  ///< set when "all" leaves it out
};

/// @brief A validated scenario with its cost model and family.
class ScenarioRun {
 public:
  /// Input error (field profile_ref) when the scenario names no cost profile;
  /// (field schedule.family) when its family is not registered.
  explicit ScenarioRun(model::ScenarioSpec spec);
  ScenarioRun(ScenarioRun&&) noexcept;
  ~ScenarioRun();

  const model::ScenarioSpec& spec() const { return spec_; }
  const cost::CostModel& costs() const { return *costs_; }
  const Family& family() const { return *family_; }

  /// "all": every schedule of the family, with those the scenario's knobs rule
  /// out marked skipped (e.g. 1a1m-uniform when schedule.slicing fixes the
  /// slices); a name: that schedule, an input error (field request.schedule) when the
  /// family has no such schedule or the scenario's knobs rule it out.
  std::vector<RequestedSchedule> schedules(const std::string& requested) const;
  /// The names of schedules(requested) that run; each one left out adds
  /// "NAME skipped: WHY" to `notes` when given.
  std::vector<std::string> runnable_schedules(const std::string& requested,
                                              std::vector<std::string>* notes = nullptr) const;

  /// The schedule at the scenario's knobs; `degree` (the family's overlap
  /// degree) replaces the scenario's when given. Input error for a family
  /// that runs no named schedule.
  sched::BuiltSchedule build(const std::string& schedule, std::optional<std::int64_t> degree = {}) const;
  /// As build(), with each compute task's work shape recorded for the executor
  /// (ScheduleMaker::build_for_replay).
  sched::BuiltSchedule build_for_replay(const std::string& schedule, std::optional<std::int64_t> degree = {}) const;

  /// Uneven expert load of a schedule built from this scenario: each drawn
  /// rank's own AlltoAll time over the graph's AlltoAlls (every rank of a
  /// multi-rank graph; one EP group in symmetric mode), the slowest, the
  /// dropped fraction. Empty when routing is balanced or the family runs no named schedule.
  std::optional<RoutingReport> routing_report(const sched::BuiltSchedule& built) const;

  /// Bytes per GPU the scenario's own mapping needs (cost::memory_per_gpu), and
  /// whether they fit in its GPU: the same memory model for every family.
  double memory_bytes_per_gpu() const;
  bool fits_in_memory() const;
  /// What a simulation of the scenario must say about its memory (docs/cost-model.md,
  /// "Memory"): that it would not fit, or that it fits by less than the memory
  /// model's error; empty when it fits with room.
  std::string memory_note() const;

 private:
  // The maker, after the checks build() and build_for_replay() share.
  const ScheduleMaker& checked_maker(std::optional<std::int64_t> degree) const;

  model::ScenarioSpec spec_;
  std::unique_ptr<cost::CostModel> costs_;
  const Family* family_ = nullptr;
  std::unique_ptr<ScheduleMaker> maker_;  // nullptr: the family runs no named schedule
};

}  // namespace moeplan::plan
