#pragma once
// Every valid 5D mapping of a scenario's model, cluster and batch, priced
// (cost::price_layers) and run (run_pipeline), ranked by iteration time, those
// that fit in memory first (MoE Parallel Folding as a capacity planner). Two
// modes: `coupled` (before folding, Megatron v0.9: etp = tp and ep divides
// dp x cp) and `folded` (any valid expert mapping).

#include <string>
#include <vector>

#include <moeplan/core/parallel.hpp>
#include <moeplan/core/progress.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/mapping_pricing.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/plan/mapping_run.hpp>
#include <moeplan/plan/plan_result.hpp>

namespace moeplan::plan {

/// The configurations a mode searches, in enumeration order (not yet checked
/// against every rule: price_layers refuses the invalid ones). Input Error for
/// a mode other than coupled or folded.
std::vector<cost::MappingConfig> enumerate_mappings(const model::ScenarioSpec& scenario, const std::string& mode);

/// @brief A valid mapping's prices and its pipeline run without overlap.
struct PricedMapping {
  cost::LayerPrices layers;
  MappingResult result;
};

/// Every valid configuration of a mode priced once and run, those that fit
/// first by iteration time (ties: smaller tp, cp, pp, ep, etp, vpp,
/// micro-batch), then the rest. `started`, when given, records how many
/// threads the search could start. A mapping too large to simulate is a Limit
/// Error naming it (the search would otherwise answer from the others).
std::vector<PricedMapping> price_mappings(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                                          const std::string& mode, unsigned threads = 2,
                                          ThreadsStarted* started = nullptr, Progress* progress = nullptr);

/// A priced mapping as a plan's candidate (schedule: the search mode, or the
/// joint search's label), its knobs the mapping and micro-batch size.
Candidate mapping_candidate(const std::string& schedule, const MappingResult& mapping);

/// price_mappings' results alone.
std::vector<MappingResult> search_mappings(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                                           const std::string& mode, unsigned threads = 2,
                                           ThreadsStarted* started = nullptr, Progress* progress = nullptr);

}  // namespace moeplan::plan
