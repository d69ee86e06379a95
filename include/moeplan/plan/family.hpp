#pragma once
// A schedule family as a plug-in (docs/architecture.md, "Families"; LLVM's
// TargetRegistry is the model): each family lives in its own folder
// (src/family/<name>/), registers itself once at start-up
// (family/builtin.hpp), and answers everything generic code asks of it
// through this interface: its rules (model/family_rules.hpp), how it builds
// a scenario's schedules, simulates, plans, evaluates a sweep point, runs a
// plan's candidate again, and, for the joint search, how it probes a layer
// shape. `simulate`, `plan`, `sweep`, the joint search, `capacity`, the
// reporters, the CLI and the Python module go through plan/family_registry.hpp
// and never name a family.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/model/family_rules.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/mapping_run.hpp>
#include <moeplan/plan/plan_result.hpp>
#include <moeplan/sched/schedule.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::plan {

class ScenarioRun;

/// @brief Builds a scenario's named schedules. Made once per scenario: a
/// family keeps here what every schedule reuses (FSMoE's closed forms).
class ScheduleMaker {
 public:
  virtual ~ScheduleMaker() = default;
  /// The schedule at the scenario's knobs; `degree` (the family's overlap
  /// degree) replaces the scenario's when given. Input Error for a degree the
  /// schedule cannot take.
  virtual sched::BuiltSchedule build(const std::string& schedule, std::optional<std::int64_t> degree) const = 0;
  /// As build(), recording each compute task's work shape (dag::WorkShape) for
  /// the executor (exec::make_replay_plan), which build() leaves out so that
  /// searches pay nothing for it. Default: build(), no shapes (a family whose
  /// graphs are replayed overrides it).
  virtual sched::BuiltSchedule build_for_replay(const std::string& schedule, std::optional<std::int64_t> degree) const {
    return build(schedule, degree);
  }
  /// How a symmetric graph priced uneven expert load: each MoE layer at its own
  /// most loaded rank (true), or every layer at the most loaded rank of the
  /// most loaded layer (false) (docs/cost-model.md, "Uneven expert load").
  virtual bool routing_priced_per_layer() const { return false; }
};

/// @brief What `simulate` asks for.
struct SimulateRequest {
  std::optional<std::string> schedule;  ///< a schedule, or "all"; empty: the scenario's own
  std::optional<std::int64_t> degree;   ///< the family's overlap degree, replacing the scenario's
  unsigned threads = 1;                 ///< results do not depend on it
  bool keep_graphs = false;             ///< keep each run's graph and timeline (traces, pictures)
};

/// @brief One simulated schedule: its figures, and its graph and timeline when kept.
struct SimulatedSchedule {
  Evaluation evaluation;                      ///< routing set when the scenario's routing is not balanced
  std::optional<NoiseSummary> noise;          ///< when schedule.compute_jitter_cv > 0
  std::optional<sched::BuiltSchedule> built;  ///< kept only when asked
  sim::Timeline timeline;                     ///< kept only when asked
};

/// @brief What `simulate` answers: the scenario's named schedules, or its own
/// mapping's pipeline (a family that searches mappings runs no named schedule).
struct Simulation {
  std::vector<SimulatedSchedule> schedules;
  bool all = false;                      ///< "all" was asked: the JSON is an array
  std::optional<MappingResult> mapping;  ///< the scenario's own mapping, priced and run
  std::optional<MappingTrace> mapping_trace;  ///< its pipeline, when graphs are kept
  std::vector<std::string> notes;        ///< what the request left out, and why
  unsigned threads_started = 1;          ///< of the parallel step over schedules
};

/// @brief The graph `simulate` runs for one schedule (or the mapping's
/// pipeline), as a trace exports it.
struct ScenarioGraph {
  sched::BuiltSchedule built;
  sim::Timeline timeline;
  bool representative = false;  ///< a rank of the graph stands for many GPUs
  std::string note;             ///< what a rank of the graph stands for, when representative
};

/// @brief A candidate's graph as built at its knobs, and its simulated timeline.
struct CandidateRun {
  sched::BuiltSchedule built;
  sim::Timeline timeline;  ///< its makespan is the candidate's iteration time
};

/// @brief A plan's first baseline run again, with the knobs it ran at.
struct BaselineRun {
  CandidateRun run;
  model::PlanKnobs knobs;
};

/// @brief One schedule of a sweep point: its evaluation at the knobs its planner chose.
struct PointResult {
  Evaluation evaluation;  ///< iteration NaN when nothing runs (no mapping fits)
  model::PlanKnobs knobs;
};

/// @brief What a probe of a layer shape needs beyond the scenario (FSMoE's
/// planner on the probe), made once per probe and shared by its schedules.
class ProbeSetup {
 public:
  virtual ~ProbeSetup() = default;
};

/// @brief What the joint search asks of a family whose schedules overlap a
/// layer's communication (plan/overlap_probe.hpp).
class OverlapProbing {
 public:
  virtual ~OverlapProbing() = default;
  /// The degrees the joint search tries for the family's schedules on `probe`.
  virtual std::vector<std::int64_t> probe_degrees(const model::ScenarioSpec& probe) const = 0;
  /// What every schedule probed on `probe` shares; nullptr when nothing.
  virtual std::unique_ptr<ProbeSetup> prepare_probe(const model::ScenarioSpec& probe,
                                                    const cost::CostModel& costs) const {
    (void)probe;
    (void)costs;
    return nullptr;
  }
  /// `schedule` at `degree` built on `probe`; `setup` is prepare_probe's
  /// (nullptr for the family's none, built without it). Input Error when the
  /// schedule cannot take the degree on this probe.
  virtual sched::BuiltSchedule build_probe(const model::ScenarioSpec& probe, const cost::CostModel& costs,
                                           const std::string& schedule, std::int64_t degree,
                                           const ProbeSetup* setup) const = 0;
  /// The (forward, backward) degrees build_probe builds `schedule` at.
  virtual std::pair<std::int64_t, std::int64_t> built_degrees(const ProbeSetup* setup, const std::string& schedule,
                                                              std::int64_t degree) const {
    (void)setup;
    (void)schedule;
    return {degree, degree};
  }
  /// How the family names its degree in a plan's text ("d", "R", "r").
  virtual const char* degree_symbol() const = 0;
  /// Whether its degree is chosen per phase (a plan's knobs carry degree_forward and degree_backward).
  virtual bool per_phase_degrees() const { return false; }
};

/// @brief A schedule family.
class Family {
 public:
  virtual ~Family() = default;
  /// What validation and the loader know of the family.
  virtual const model::FamilyRules& rules() const = 0;
  const std::string& name() const { return rules().name(); }

  /// The maker of the scenario's named schedules; nullptr for a family that
  /// runs none (it searches mappings).
  virtual std::unique_ptr<ScheduleMaker> schedule_maker(const model::ScenarioSpec& scenario,
                                                        const cost::CostModel& costs) const = 0;
  /// `simulate`. Default: each requested named schedule built, run and
  /// evaluated (plan/simulate.hpp).
  virtual Simulation simulate(const ScenarioRun& run, const SimulateRequest& request) const;
  /// The one graph a trace of the scenario holds. Default: the named
  /// schedule (the scenario's when empty) at `degree`, each compute task's
  /// work shape recorded (ScenarioRun::build_for_replay).
  virtual ScenarioGraph graph(const ScenarioRun& run, const std::string& schedule,
                              std::optional<std::int64_t> degree) const;
  /// Whether the scenario's mapping is the family's to search (true) or fixed
  /// by the scenario and shared by its schedules (false).
  virtual bool searches_mappings() const { return false; }

  /// `plan`: search the knobs the scenario leaves open, and choose. Input
  /// Error (field request.schedule) for a schedule the family lacks or the
  /// scenario's knobs rule out; runtime Error when nothing fits.
  virtual PlanResult plan(const ScenarioRun& run, const PlanRequest& request) const = 0;
  /// A sweep point: each of `schedules` (names the family has) at the knobs its planner chooses.
  virtual std::vector<PointResult> sweep_point(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                                               const std::vector<std::string>& schedules, unsigned threads) const = 0;
  /// A plan's candidate run again at its knobs on `run`'s cost model.
  virtual CandidateRun run_candidate(const ScenarioRun& run, const PlanResult& result,
                                     const Candidate& candidate) const = 0;
  /// The plan's first baseline run again; empty when the plan has none.
  virtual std::optional<BaselineRun> run_baseline(const ScenarioRun& run, const PlanResult& result) const = 0;

  /// The form `plan --emit` prints the family's plans in: "knobs" (key=value,
  /// the overlap system's arguments) or "megatron" (Megatron-LM's arguments).
  virtual std::string emit_format() const = 0;
  /// Why the reference executor cannot replay the family's graphs; empty when it can.
  virtual std::optional<std::string> replay_refusal() const { return std::nullopt; }
  /// The joint search's probes of the family's schedules; nullptr for a
  /// family without overlap schedules.
  virtual const OverlapProbing* overlap() const { return nullptr; }
};

}  // namespace moeplan::plan
