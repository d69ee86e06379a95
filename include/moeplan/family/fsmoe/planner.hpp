#pragma once
// FSMoE's planner: per-phase pipeline degrees from the closed forms
// (Algorithm 1), the adaptive gradient partition of section 5 (Step 1, Eqs. 3-4;
// Step 2, Eq. 5 by seeded differential evolution), and the engine evaluation
// of the six Fig. 3 schedules.

#include <cstdint>
#include <string>
#include <vector>

#include <moeplan/core/parallel.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/family/fsmoe/closed_form.hpp>
#include <moeplan/family/fsmoe/builder.hpp>

namespace moeplan::fsmoe {

/// The closed-form model of the scenario's MoE layer in one phase: Eq. 1
/// coefficients from the cost model (alpha_exp, beta_exp = GEMMs x gemm line)
/// and the workload sizes; backward doubles the expert startup and work (section 4.4).
MoeLayerModel fsmoe_layer_model(const model::ScenarioSpec& scenario, const cost::CostModel& costs, bool backward,
                                double t_gar_ms = 0);

/// Expert capacity T = k f B L / E tokens (fsmoe.md section 2.1); 0 when dropless.
std::int64_t expert_capacity_tokens(const model::ScenarioSpec& scenario);

/// @brief Section 5's gradient partition, per generalized layer in model order,
/// of the dense gradients all-reduced over DP (expert gradients go over EDP,
/// sched/fsmoe.hpp).
struct GradientPartition {
  std::vector<double> during_moe_bytes;       ///< Step 1 (MoE overlappable part) + Step 2
  std::vector<double> during_dense_bytes;     ///< Step 1 (dense overlappable part)
  std::vector<double> step1_bytes;            ///< n_first (Eq. 3)
  std::vector<double> step2_bytes;            ///< x_g (Eq. 5)
  double tail_bytes = 0;                      ///< all-reduced after the backward pass
  std::vector<std::int64_t> degree_backward;  ///< Algorithm 1 with each layer's t_gar
  double objective_ms = 0;                    ///< Eq. 5 objective plus the tail all-reduce
};

/// @brief Differential-evolution settings (rand/1/bin).
struct EvolutionSettings {
  std::uint64_t seed = 42;
  std::int32_t population = 30;
  std::int32_t generations = 120;
  double mutation = 0.5;   ///< F
  double crossover = 0.9;  ///< CR
  /// false: Step 1 alone (Eqs. 3-4, no Eq. 5 search): the member Step 2 starts from.
  bool step2 = true;
};

GradientPartition partition_gradients(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                                      const std::vector<std::int64_t>& allowed, std::int64_t degree_backward,
                                      const EvolutionSettings& settings = {});

/// @brief The planner's answer for an FSMoE scenario.
struct FsMoePlan {
  PhaseDegrees degrees;       ///< FSMoE's forward / backward choice (t_gar = 0)
  double overlap_gap_ms = 0;  ///< t_olp,moe at the backward degree (section 5.2)
  GradientPartition partition;
  std::int64_t tutel_degree = 1;      ///< PipeMoE's adaptive r: the best simulated single degree
  std::vector<plan::Evaluation> schedules;  ///< in the order asked
  std::vector<fsmoe::FsMoeKnobs> knobs;
  bool multi_rank = false;  ///< the scenario's schedule.mode: every simulated graph per rank
  ThreadsStarted threads;  ///< of the planner's parallel steps, the one that fell shortest
};

/// The scenario's schedule.degree fixes r of every schedule (both phases);
/// degree_forward / degree_backward fix one phase of fsmoe and fsmoe-no-iio.
/// Results do not depend on `threads`.
FsMoePlan plan_fsmoe(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                     const std::vector<std::string>& schedules, unsigned threads = 1);

/// The knobs plan_fsmoe uses for one schedule.
fsmoe::FsMoeKnobs fsmoe_knobs(const FsMoePlan& plan, const std::string& schedule);

}  // namespace moeplan::fsmoe
