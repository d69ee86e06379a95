#pragma once
// What every planner answers with (issue 17 item 1), the same shape for every
// family: the chosen candidate, every candidate ranked, the baselines, and the
// family's own search record (plan/search_record.hpp), which writes its own
// JSON and text and names the report's picture.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/core/parallel.hpp>
#include <moeplan/core/progress.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::plan {

class SearchRecord;

/// @brief One configuration a planner evaluated, at its best knobs.
struct Candidate {
  /// The overlap schedule; a mapping search: its mode (folded, coupled); the
  /// joint search: "none" or "family/schedule" (JointResult::label)
  std::string schedule;
  model::PlanKnobs knobs;
  double iteration_ms = 0;
  double memory_bytes_per_gpu = 0;
  bool fits = true;           ///< in what the GPU holds of tensors (docs/cost-model.md, "Memory")
  std::optional<double> mfu;  ///< mapping searches
};

/// @brief A configuration every plan is compared with (no overlap, Tutel, a coupled mapping).
struct Baseline {
  std::string name;
  double iteration_ms = 0;
};

/// @brief What a plan is asked for.
struct PlanRequest {
  std::string schedule = "all";  ///< a schedule of the family, or all
  unsigned threads = 1;          ///< results do not depend on it
  Progress* progress = nullptr;  ///< told of every candidate evaluated (a bar on a terminal), or nobody
};

/// @brief A planner's answer, the same shape for every family.
struct PlanResult {
  std::string scenario;  ///< the scenario's name
  std::string family;    ///< the scenario's family, or "joint" (the joint search)
  Candidate chosen;                   ///< the best requested candidate that fits (mapping searches) or runs
  std::vector<Candidate> candidates;  ///< every requested candidate, best first (ties: enumeration order)
  std::vector<Baseline> baselines;
  double tokens_per_iteration = 0;  ///< global batch x sequence length
  std::vector<std::string> notes;   ///< what the request left out, and why
  ThreadsStarted threads;           ///< the parallel step that fell shortest
  std::shared_ptr<const SearchRecord> search;  ///< the family's own record of the search

  /// The baseline named `name`; nullptr when the plan has none of that name.
  const Baseline* baseline(const std::string& name) const;
  /// Tokens per second of the chosen candidate.
  double tokens_per_s() const { return tokens_per_iteration / (chosen.iteration_ms / 1000.0); }
  /// The record as the family's type, or nullptr (a family's own code reads its record so).
  template <typename Record>
  const Record* search_as() const {
    return dynamic_cast<const Record*>(search.get());
  }
};

/// Best first; equal times keep the enumeration order (the earliest wins ties).
void rank_candidates(std::vector<Candidate>& candidates);

/// The PlanSpec a plan file and the CLI.md plan keys carry: the chosen
/// candidate against the first baseline (none; a mapping search: the best coupled mapping).
model::PlanSpec plan_spec(const PlanResult& result);

}  // namespace moeplan::plan
