#pragma once
// One planner interface for every family (issue 17 item 1). A family (foldmoe,
// fsmoe, flowmoe, folding) registers a Planner; `plan`, and the commands built
// on it, ask planner_for(family) and get the same PlanResult shape: the chosen
// candidate, every candidate ranked, the baselines, and the family's own
// search record. The CLI only prints it (io/plan_report.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <moeplan/core/parallel.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/plan/flowmoe_planner.hpp>
#include <moeplan/plan/folding.hpp>
#include <moeplan/plan/foldmoe_planner.hpp>
#include <moeplan/plan/fsmoe_planner.hpp>
#include <moeplan/plan/joint.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::plan {

/// @brief One configuration a planner evaluated, at its best knobs.
struct Candidate {
  /// The overlap schedule; folding: the mapping mode (folded, coupled); joint:
  /// "none" or "family/schedule" (JointResult::label)
  std::string schedule;
  model::PlanKnobs knobs;
  double iteration_ms = 0;
  double memory_bytes_per_gpu = 0;
  bool fits = true;           ///< in the GPU's memory, less its reserve (docs/cost-model.md, "Memory")
  std::optional<double> mfu;  ///< folding
};

/// @brief A configuration every plan is compared with (no overlap, Tutel, a coupled mapping).
struct Baseline {
  std::string name;
  double iteration_ms = 0;
};

/// @brief The folding search: every mapping of each mode, those that fit first.
struct FoldingSearch {
  std::vector<FoldingResult> folded;
  std::vector<FoldingResult> coupled;
};

/// @brief What a plan is asked for.
struct PlanRequest {
  std::string schedule = "all";  ///< a schedule of the family, or all (not for folding)
  unsigned threads = 1;          ///< results do not depend on it
  Progress* progress = nullptr;  ///< told of every candidate evaluated (a bar on a terminal), or nobody
};

/// @brief A planner's answer, the same shape for every family.
struct PlanResult {
  std::string scenario;  ///< the scenario's name
  std::string family;
  Candidate chosen;                   ///< the best requested candidate that fits (folding) or runs
  std::vector<Candidate> candidates;  ///< every requested candidate, best first (ties: enumeration order)
  std::vector<Baseline> baselines;
  double tokens_per_iteration = 0;  ///< global batch x sequence length
  std::vector<std::string> notes;   ///< what the request left out, and why
  ThreadsStarted threads;           ///< the parallel step that fell shortest
  std::variant<FoldMoePlan, FsMoePlan, FlowMoePlan, FoldingSearch, JointSearch> search;

  /// The baseline named `name`; nullptr when the plan has none of that name.
  const Baseline* baseline(const std::string& name) const;
  /// Tokens per second of the chosen candidate.
  double tokens_per_s() const { return tokens_per_iteration / (chosen.iteration_ms / 1000.0); }
};

/// @brief A family's planner: search the knobs the scenario leaves open, and choose.
class Planner {
 public:
  virtual ~Planner() = default;
  virtual const char* family() const = 0;
  /// Input Error (field --schedule) for a schedule the family lacks or the
  /// scenario's knobs rule out; runtime Error when nothing fits (folding).
  virtual PlanResult plan(const ScenarioRun& run, const PlanRequest& request) const = 0;
};

/// The registered planner of a family, or "joint" (the joint mapping x
/// overlap search of a folding scenario); an input Error (field
/// schedule.family) for another name.
const Planner& planner_for(const std::string& family);

/// The PlanSpec a plan file and the CLI.md plan keys carry: the chosen
/// candidate against the first baseline (none; folding: the best coupled mapping).
model::PlanSpec plan_spec(const PlanResult& result);

}  // namespace moeplan::plan
