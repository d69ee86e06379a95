#pragma once
// The joint search (issue 17 item 3): parallel mappings x overlap schedules.
// The folding search ranks mappings with no overlap; the overlap planners
// tune a schedule at one fixed mapping. Here every mapping's layer shapes,
// EP AlltoAll and DP/EDP gradient traffic go to each overlap family's
// schedules (overlap_probe.hpp), what a schedule hides comes off the
// mapping's pipeline chunks and optimizer step, the pipeline runs again on
// the engine, and the mapping is ranked by its best overlapped iteration
// (docs/cost-model.md, "Joint search: mapping x overlap").
//
// Mappings are taken in the order of a lower bound on their overlapped
// iteration (all of their communication hidden), in batches of a fixed size;
// the search stops when the next bound exceeds the `exact_top`-th best found,
// so the best `exact_top` are exactly those of an exhaustive search and the
// answer does not depend on the thread count.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/core/parallel.hpp>
#include <moeplan/core/progress.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/plan/folding.hpp>
#include <moeplan/plan/overlap_probe.hpp>

namespace moeplan::plan {

/// @brief What a joint search is asked for.
struct JointOptions {
  std::string mode = "folded";  ///< the mappings: folded or coupled (search_mappings)
  std::vector<std::string> families = {"foldmoe", "fsmoe", "flowmoe"};
  std::size_t exact_top = 10;  ///< the best this many are exact
  /// Mappings evaluated together; the search stops only between batches, so
  /// a fixed size (not the thread count) keeps the answer the same at any thread count.
  std::size_t batch = 16;
  unsigned threads = 1;
  Progress* progress = nullptr;  ///< told of each mapping evaluated (and of those the bound left out)
  /// When no mapping fits: a runtime Error (true), or an empty ranking (false).
  bool require_fit = true;
};

/// @brief One mapping at one overlap schedule, priced.
struct JointResult {
  FoldingResult priced;  ///< iteration, MFU, memory; breakdown unhidden, stage times with the overlap
  /// The schedule; family "none" and schedule "none": no overlap (the folding search's price).
  OverlapSchedule overlap{"none", "none", 0};
  std::int64_t degree_forward = 0, degree_backward = 0;  ///< as built (FSMoE's closed forms per phase)
  double no_overlap_ms = 0;                              ///< the same mapping with no overlap
  StageOverlap saved;                                    ///< per chunk of a micro-batch, and the optimizer step
  double gradient_hidden_fraction = 0;                   ///< of the layers' gradient reduce-scatter

  /// "none", or "family/schedule".
  std::string label() const;
  /// What the schedule takes off one stage per iteration: every micro-batch's
  /// chunks (vpp per stage) and the optimizer step (negative: it adds time).
  double hidden_ms() const;
};

/// @brief The search's answer.
struct JointSearch {
  /// Every mapping evaluated with every schedule that fits, each at its best
  /// schedule, best first (ties: smaller tp, cp, pp, ep, etp, vpp, micro-batch).
  std::vector<JointResult> ranked;
  JointResult best_no_overlap;                 ///< the folding search's best mapping that fits
  std::optional<JointResult> default_mapping;  ///< the scenario's own mapping at its best schedule, when asked
  std::optional<FoldingResult> fastest;        ///< the fastest mapping with no overlap, fitting or not
  double least_memory_bytes = 0;               ///< per GPU, of the leanest valid mapping (0: none is valid)
  std::size_t mappings = 0;                    ///< valid mappings of the mode
  std::size_t fitting = 0;                     ///< of them, those that fit in memory
  std::size_t evaluated = 0;                   ///< of those, evaluated with every schedule (the rest: bound)
  std::size_t shapes_probed = 0;               ///< distinct layer shapes probed
  std::size_t gradient_probes = 0;             ///< distinct (shape, gradient groups, schedule) probed
  std::size_t configurations = 0;              ///< mappings x schedules priced on the engine
  ThreadsStarted threads;

  const JointResult& best() const { return ranked.front(); }
};

/// Runs the joint search. `default_mapping`, when given, is also evaluated
/// whether or not it fits (an input Error when it is not valid). When no
/// mapping of the mode fits in memory: a runtime Error, or with
/// options.require_fit false an empty ranking (best() is then not to be called).
JointSearch search_joint(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                         const JointOptions& options = {},
                         const std::optional<FoldingConfig>& default_mapping = std::nullopt);

/// One mapping at one schedule, probed and priced as the search prices it
/// (family "none": the folding search's price). Input Error when the mapping
/// is not valid or the schedule's builder refuses its degree.
JointResult price_joint(const model::ScenarioSpec& scenario, const cost::CostModel& costs, const FoldingConfig& mapping,
                        const OverlapSchedule& schedule);

/// The lower bound the search orders mappings by: the pipeline with every
/// chunk shortened by all of its communication (at most that is hidden) and
/// the optimizer step less the layers' gradient reduce-scatter. The pipeline
/// is max-plus in its task times on in-order streams, so shortening every
/// chunk to at least r times its time shortens the iteration to at least r times.
double joint_lower_bound_ms(const FoldingResult& no_overlap);

/// The same bound for one overlap: no_overlap's pipeline with its chunks
/// shortened by `overlap` (lengthened chunks count as unchanged) and its
/// optimizer step by `overlap`'s saving.
double schedule_lower_bound_ms(const FoldingResult& no_overlap, const StageOverlap& overlap);

/// What `probed` takes off `mapping`'s stage (no_overlap's stage times), the
/// hidden part of each chunk capped at the chunk's communication; the optimizer
/// saving is `gradient_hidden_fraction` of the layers' gradient reduce-scatter.
StageOverlap stage_overlap(const FoldingResult& no_overlap, const ProbedSchedule& probed,
                           double gradient_hidden_fraction);

}  // namespace moeplan::plan
