#pragma once
// The parts of a plan's explanation (plan/explain.hpp fills them; a family's
// search record answers the ones only it can: plan/search_record.hpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moeplan::plan {

/// @brief A chosen knob at an end of the range the planner searched.
struct EdgeKnob {
  std::string knob;  ///< e.g. "degree", "ar_chunk_bytes"
  std::int64_t value = 0;
  std::int64_t searched_min = 0;
  std::int64_t searched_max = 0;
  std::string advice;
};

/// @brief What bound the choice.
struct BindingConstraint {
  std::string name;    ///< "memory", or "none"
  std::string detail;  ///< e.g. the faster mapping that did not fit
};

/// @brief One term of the cost breakdown: the baseline's ms minus the chosen one's.
struct Saving {
  std::string term;  ///< exposed_comm_ms, bubble_ms, a2a_critical_ms, ...
  double baseline_ms = 0;
  double chosen_ms = 0;
};

/// @brief The savings of a plan against one baseline.
struct Savings {
  std::string baseline;  ///< the baseline the savings are against (empty: none)
  std::vector<Saving> terms;
};

/// @brief The ranking under one perturbed cost profile.
struct Perturbation {
  std::string what;  ///< inter_bandwidth, intra_bandwidth or gemm_speed
  double scale = 1;  ///< 0.8 or 1.2: bandwidth (or GEMM FLOP/s) times this
  std::size_t winner = 0;  ///< index into PlanResult::candidates of the fastest re-evaluated one
  double chosen_ms = 0;    ///< the chosen candidate re-evaluated
  double winner_ms = 0;
};

/// @brief The explanation of one plan.
struct Explanation {
  std::vector<EdgeKnob> edges;
  BindingConstraint binding;
  std::string savings_baseline;  ///< the baseline the savings are against (empty: none)
  std::vector<Saving> savings;
  std::size_t sensitivity_candidates = 0;  ///< the best candidates re-evaluated under each perturbation
  std::vector<Perturbation> sensitivity;
  bool fragile = false;  ///< some perturbation makes another candidate win
};

}  // namespace moeplan::plan
