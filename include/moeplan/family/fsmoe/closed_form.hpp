#pragma once
// FSMoE's closed-form performance model of one MoE layer (fsmoe.md section 4):
// per-chunk times (Eq. 1), conditions Q1..Q7, the four cases and their times,
// and Algorithm 1 (FindOptimalPipelineDegree) solved with NLopt's SLSQP.

#include <cstdint>
#include <vector>

namespace moeplan::fsmoe {

/// @brief alpha (ms) + n x beta (ms per unit) of one operation of the layer.
struct AlphaBeta {
  double alpha_ms = 0;
  double beta_ms = 0;  ///< per byte (communication) or per FLOP (experts)
  double n = 0;        ///< bytes or FLOPs of the whole (unchunked) operation
  /// Eq. 1: time of one of r chunks, alpha + (n / r) beta.
  double chunk_ms(double r) const { return alpha_ms + n / r * beta_ms; }
};

/// @brief The coefficients of one MoE layer in one phase (Algorithm 1's input).
struct MoeLayerModel {
  AlphaBeta a2a, ag, rs, exp;
  double t_gar_ms = 0;  ///< Gradient-AllReduce overlapped with this layer (0 in forward)
};

enum class FsCase { Case1 = 1, Case2 = 2, Case3 = 3, Case4 = 4 };

/// @brief The seven conditions at a degree r.
struct Conditions {
  bool q1, q2, q3, q4, q5, q6, q7;
};
Conditions conditions(const MoeLayerModel& m, double r);

/// The case that holds at r (exactly one does).
FsCase case_at(const MoeLayerModel& m, double r);
/// t_c^moe(r) of a case's formula (Eq. 2 and section 4.2).
double case_time_ms(const MoeLayerModel& m, FsCase c, double r);
/// t^moe(r): the formula of the case that holds at r.
double moe_time_ms(const MoeLayerModel& m, double r);
/// t_olp,moe(r) of section 5.2 with t_gar = 0: the time of this layer during which
/// the inter-node link is free for Gradient-AllReduce (0 in Case 1).
double overlappable_ms(const MoeLayerModel& m, double r);

/// @brief A chosen degree and what it gives.
struct DegreeChoice {
  std::int64_t r = 1;
  double t_moe_ms = 0;
  FsCase which = FsCase::Case2;
};

/// Algorithm 1: per case, SLSQP on f_c(r) subject to r >= 1 and the case's
/// conditions (each disjunct solved on its own, a few starting points), then
/// the best allowed integer among the neighbours of each continuous optimum
/// that still lies in the case. `allowed` is sorted, non-empty.
DegreeChoice find_optimal_degree(const MoeLayerModel& m, const std::vector<std::int64_t>& allowed);

/// The reference: t^moe(r) at every allowed r (ties: smallest r).
DegreeChoice brute_force_degree(const MoeLayerModel& m, const std::vector<std::int64_t>& allowed);

/// @brief brute_force_degree of one layer model at any t_gar: Step 2 of the
/// gradient partition (planner.cpp) asks it thousands of times per layer
/// with only t_gar changing. What Q1..Q7 and the case times hold apart from
/// t_gar is computed once per allowed degree, by the same expressions in the
/// same order, so best(t) is brute_force_degree of the model with t_gar_ms =
/// t bit for bit (closed_form_test.cpp holds it to that).
class GarDegreeTable {
 public:
  /// `model`'s t_gar_ms is ignored; `allowed` is non-empty.
  GarDegreeTable(const MoeLayerModel& model, const std::vector<std::int64_t>& allowed);
  DegreeChoice best(double t_gar_ms) const;

 private:
  struct Degree {
    std::int64_t r;
    bool q1, q2, q3;                          // Q1..Q3: free of t_gar
    double q4_rhs, q5_rhs, q6_rhs, q7_rhs;    // Qi holds when t_gar - rhs > 0
    double case1_without_gar, case2, case3, case4;  // the case times (Case 1 adds t_gar)
  };
  std::vector<Degree> degrees_;
};

/// Allowed degrees: 1..32 (Tutel's limit) dividing the expert capacity (all of
/// 1..32 when capacity is 0, i.e. dropless).
std::vector<std::int64_t> allowed_degrees(std::int64_t expert_capacity_tokens);

/// @brief Rules of the authors' released solver (FSMoE repository, tools/optim.py).
struct ReleasedSolverRules {
  bool enabled = false;
  double forward_a2a_threshold_ms = 1.0;  ///< forward r = 1 if the unchunked A2A takes less
};

/// The released solver's degrees: {1, 2, 4, 8}.
std::vector<std::int64_t> released_solver_degrees();

/// Forward and backward degrees. Paper mode: Algorithm 1 on each phase over
/// `allowed`. Released-solver mode: Algorithm 1 over {1, 2, 4, 8} (the
/// continuous optimum rounded down and up to powers of two, feasibility
/// re-checked), forward r = 1 when the unchunked A2A takes under the
/// threshold, backward r = 1 when forward r is 1.
struct PhaseDegrees {
  DegreeChoice forward, backward;
};
PhaseDegrees choose_degrees(const MoeLayerModel& forward, const MoeLayerModel& backward,
                            const std::vector<std::int64_t>& allowed, const ReleasedSolverRules& rules);

const char* to_string(FsCase c);

}  // namespace moeplan::fsmoe
