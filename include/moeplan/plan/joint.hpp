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
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <memory>

#include <moeplan/core/parallel.hpp>
#include <moeplan/core/progress.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/mapping_pricing.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/plan/mapping_run.hpp>
#include <moeplan/plan/overlap_probe.hpp>
#include <moeplan/plan/plan_result.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/plan/search_record.hpp>

namespace moeplan::plan {

/// @brief Overlap probes kept between joint searches of the same model,
/// cluster kind, cost profile, sequence length, recompute setting, limits and
/// families: the capacity table's rows. A probe depends on its layer shape
/// and those alone (probe_scenario takes only the nodes its ranks fill), so a
/// shape probed for one GPU count serves every other. A search checks that a
/// cache it is given was filled for the same (an internal error otherwise).
struct ProbeCache {
  /// Each shape's schedules without gradient traffic (probe_layer_shape).
  std::map<LayerShape, std::vector<ProbedSchedule>> shapes;
  /// Each (shape with its gradient groups, schedule)'s gradient probe.
  std::map<std::pair<LayerShape, OverlapSchedule>, GradientProbe> gradients;
  /// What the probes were of, set by the first search.
  std::string context;
};

/// @brief What a joint search is asked for.
struct JointOptions {
  std::string mode = "folded";  ///< the mappings: folded or coupled (price_mappings)
  /// The families whose schedules are tried; empty: every registered family with overlap schedules.
  std::vector<std::string> families;
  std::size_t exact_top = 10;  ///< the best this many are exact
  /// Mappings evaluated together; the search stops only between batches, so
  /// a fixed size (not the thread count) keeps the answer the same at any thread count.
  std::size_t batch = 16;
  unsigned threads = 1;
  Progress* progress = nullptr;  ///< told of each mapping evaluated (and of those the bound left out)
  /// When no mapping fits: a runtime Error (true), or an empty ranking (false).
  bool require_fit = true;
  /// Probes to take and keep (ProbeCache: searches of the same model and
  /// cluster kind); null: the search probes for itself alone. Not shared
  /// between searches running at once.
  ProbeCache* probes = nullptr;
};

/// @brief One mapping at one overlap schedule, priced.
struct JointResult {
  MappingResult priced;  ///< iteration, MFU, memory; breakdown unhidden, stage times with the overlap
  /// The mapping's prices (priced once, shared by every schedule run on it).
  std::shared_ptr<const cost::LayerPrices> layers;
  /// The schedule; OverlapSchedule::none(): no overlap (the mapping search's price).
  OverlapSchedule overlap{OverlapSchedule::kNone, OverlapSchedule::kNone, 0};
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
  JointResult best_no_overlap;                 ///< the mapping search's best mapping that fits
  std::optional<JointResult> default_mapping;  ///< the scenario's own mapping at its best schedule, when asked
  std::optional<MappingResult> fastest;        ///< the fastest mapping with no overlap, fitting or not
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
                         const std::optional<cost::MappingConfig>& default_mapping = std::nullopt);

/// One mapping at one schedule, probed and priced as the search prices it
/// (family "none": the folding search's price). Input Error when the mapping
/// is not valid or the schedule's builder refuses its degree.
JointResult price_joint(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                        const cost::MappingConfig& mapping, const OverlapSchedule& schedule);

/// The lower bound the search orders mappings by: the pipeline with every
/// chunk shortened by all of its communication (at most that is hidden) and
/// the optimizer step less the layers' gradient reduce-scatter. The pipeline
/// is max-plus in its task times on in-order streams, so shortening every
/// chunk to at least r times its time shortens the iteration to at least r times.
double joint_lower_bound_ms(const MappingResult& no_overlap);

/// The same bound for one overlap: no_overlap's pipeline with its chunks
/// shortened by `overlap` (lengthened chunks count as unchanged) and its
/// optimizer step by `overlap`'s saving.
double schedule_lower_bound_ms(const MappingResult& no_overlap, const StageOverlap& overlap);

/// What `probed` takes off `mapping`'s stage (no_overlap's stage times), the
/// hidden part of each chunk capped at the chunk's communication; the optimizer
/// saving is `gradient_hidden_fraction` of the layers' gradient reduce-scatter.
StageOverlap stage_overlap(const MappingResult& no_overlap, const ProbedSchedule& probed,
                           double gradient_hidden_fraction);

/// "r8/8" (a family choosing its degree per phase), "R2", "d4" (its degree
/// symbol), "" for no overlap: how plans and the capacity table name an
/// overlap schedule's degrees.
std::string overlap_degree_text(const OverlapSchedule& overlap, std::int64_t degree_forward,
                                std::int64_t degree_backward);

/// @brief The joint search's record of a plan (plan/search_record.hpp): its
/// keys of the plan's JSON and text, what bound it (a mapping that does not
/// fit), its savings against the best mapping with no overlap, --emit megatron.
class JointRecord final : public SearchRecord {
 public:
  explicit JointRecord(JointSearch search) : search_(std::move(search)) {}
  const JointSearch& search() const { return search_; }

  void write_json(io::Json& doc, const PlanResult& result) const override;
  std::string text(const PlanResult& result) const override;
  BindingConstraint binding_constraint(const model::ScenarioSpec& scenario, const PlanResult& result) const override;
  Savings savings(const PlanResult& result) const override;
  double evaluate_candidate(const ScenarioRun& run, const PlanResult& result, const Candidate& candidate) const override;
  SearchPicture picture(const model::ScenarioSpec& scenario, const PlanResult& result,
                        const Candidate& chosen) const override;
  std::string emit_format() const override;
  std::string emit(const PlanResult& result, const model::ScenarioSpec& scenario) const override;
  std::string emit_refusal_note() const override;

 private:
  JointSearch search_;
};

/// The joint search (`plan --joint`) of a scenario whose family searches
/// mappings: its model, cluster and batch, every mapping with every overlap
/// family's schedules, as one PlanResult (family "joint"). Input Error (field
/// request.joint) for a scenario whose mapping its family fixes.
PlanResult plan_joint(const ScenarioRun& run, const PlanRequest& request);

}  // namespace moeplan::plan
