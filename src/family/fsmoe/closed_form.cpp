#include <moeplan/family/fsmoe/closed_form.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include <nlopt.hpp>

#include <moeplan/core/error.hpp>

namespace moeplan::fsmoe {
namespace {

// One conjunction of conditions, each as g(r) >= 0 (strict inequalities of
// the paper are kept strict when a case is checked exactly, in conditions()).
using Constraint = std::function<double(const MoeLayerModel&, double)>;

double ta2a(const MoeLayerModel& m, double r) { return m.a2a.chunk_ms(r); }
double tag(const MoeLayerModel& m, double r) { return m.ag.chunk_ms(r); }
double trs(const MoeLayerModel& m, double r) { return m.rs.chunk_ms(r); }
double texp(const MoeLayerModel& m, double r) { return m.exp.chunk_ms(r); }

// Left minus right side of Q1..Q7: Qi holds when the value is > 0.
double q1(const MoeLayerModel& m, double r) { return ta2a(m, r) - tag(m, r); }
double q2(const MoeLayerModel& m, double r) { return r * texp(m, r) - 2 * (r - 1) * ta2a(m, r); }
double q3(const MoeLayerModel& m, double r) { return r * texp(m, r) - (r - 1) * (tag(m, r) + trs(m, r)); }
double q4(const MoeLayerModel& m, double r) { return m.t_gar_ms - (tag(m, r) + trs(m, r)); }
double q5(const MoeLayerModel& m, double r) {
  return m.t_gar_ms - (r * texp(m, r) - 2 * (r - 1) * ta2a(m, r) + tag(m, r) + trs(m, r));
}
double q6(const MoeLayerModel& m, double r) {
  return m.t_gar_ms - (r * tag(m, r) + r * trs(m, r) - 2 * (r - 1) * ta2a(m, r));
}
double q7(const MoeLayerModel& m, double r) {
  return m.t_gar_ms - (tag(m, r) + trs(m, r) + r * texp(m, r) - 2 * (r - 1) * ta2a(m, r));
}

// A condition and its negation as constraints g(r) >= 0.
Constraint holds(double (*q)(const MoeLayerModel&, double)) {
  return [q](const MoeLayerModel& m, double r) { return q(m, r); };
}
Constraint fails(double (*q)(const MoeLayerModel&, double)) {
  return [q](const MoeLayerModel& m, double r) { return -q(m, r); };
}

// The disjuncts of each case (section 4.2).
std::vector<std::vector<Constraint>> disjuncts(FsCase c) {
  switch (c) {
    case FsCase::Case1:
      return {{holds(q1), fails(q2), holds(q4)},
              {holds(q1), holds(q2), holds(q5)},
              {fails(q1), fails(q3), holds(q6)},
              {fails(q1), holds(q3), holds(q7)}};
    case FsCase::Case2:
      return {{holds(q1), holds(q2), fails(q5)}, {fails(q1), holds(q3), fails(q7)}};
    case FsCase::Case3:
      return {{holds(q1), fails(q2), fails(q4)}};
    case FsCase::Case4:
      return {{fails(q1), fails(q3), fails(q6)}};
  }
  return {};
}

struct Problem {
  const MoeLayerModel* model;
  FsCase which;
  const Constraint* constraint;
};

double objective(unsigned n, const double* x, double* grad, void* data) {
  const Problem* p = static_cast<const Problem*>(data);
  const double r = x[0];
  if (grad != nullptr && n == 1) {
    const double h = 1e-6 * std::max(1.0, r);
    grad[0] = (case_time_ms(*p->model, p->which, r + h) - case_time_ms(*p->model, p->which, r - h)) / (2 * h);
  }
  return case_time_ms(*p->model, p->which, r);
}

double constraint_fn(unsigned n, const double* x, double* grad, void* data) {
  // NLopt wants c(r) <= 0; our constraints are g(r) >= 0.
  const Problem* p = static_cast<const Problem*>(data);
  const double r = x[0];
  if (grad != nullptr && n == 1) {
    const double h = 1e-6 * std::max(1.0, r);
    grad[0] = -((*p->constraint)(*p->model, r + h) - (*p->constraint)(*p->model, r - h)) / (2 * h);
  }
  return -(*p->constraint)(*p->model, r);
}

// Local SLSQP optimum of case c's formula inside one disjunct, from r0.
std::optional<double> slsqp(const MoeLayerModel& m, FsCase c, const std::vector<Constraint>& conjunction, double r0,
                            double r_max) {
  nlopt::opt opt(nlopt::LD_SLSQP, 1);
  opt.set_lower_bounds(std::vector<double>{1.0});
  opt.set_upper_bounds(std::vector<double>{r_max});
  Problem objective_data{&m, c, nullptr};
  opt.set_min_objective(objective, &objective_data);
  std::vector<Problem> constraint_data;
  constraint_data.reserve(conjunction.size());
  for (const Constraint& g : conjunction) constraint_data.push_back({&m, c, &g});
  for (Problem& p : constraint_data) opt.add_inequality_constraint(constraint_fn, &p, 1e-9);
  opt.set_xtol_rel(1e-10);
  opt.set_maxeval(200);
  std::vector<double> x{r0};
  double value = 0;
  try {
    opt.optimize(x, value);
  } catch (const std::exception&) {
    return std::nullopt;  // NLopt gives up (roundoff, infeasible start): no optimum from here
  }
  for (const Constraint& g : conjunction)
    if (g(m, x[0]) < -1e-7) return std::nullopt;  // ended outside the disjunct
  return x[0];
}

bool better(const DegreeChoice& a, const DegreeChoice& b) {
  return a.t_moe_ms < b.t_moe_ms || (a.t_moe_ms == b.t_moe_ms && a.r < b.r);
}

}  // namespace

Conditions conditions(const MoeLayerModel& m, double r) {
  return {q1(m, r) > 0, q2(m, r) > 0, q3(m, r) > 0, q4(m, r) > 0, q5(m, r) > 0, q6(m, r) > 0, q7(m, r) > 0};
}

FsCase case_at(const MoeLayerModel& m, double r) {
  // conditions(m, r) read as the case tree needs them (at most three of the seven).
  if (q1(m, r) > 0) {
    if (!(q2(m, r) > 0)) return q4(m, r) > 0 ? FsCase::Case1 : FsCase::Case3;
    return q5(m, r) > 0 ? FsCase::Case1 : FsCase::Case2;
  }
  if (!(q3(m, r) > 0)) return q6(m, r) > 0 ? FsCase::Case1 : FsCase::Case4;
  return q7(m, r) > 0 ? FsCase::Case1 : FsCase::Case2;
}

double case_time_ms(const MoeLayerModel& m, FsCase c, double r) {
  switch (c) {
    case FsCase::Case1:
      return 2 * r * ta2a(m, r) + m.t_gar_ms;
    case FsCase::Case2:
      return 2 * ta2a(m, r) + tag(m, r) + trs(m, r) + r * texp(m, r);
    case FsCase::Case3:
      return 2 * r * ta2a(m, r) + tag(m, r) + trs(m, r);
    case FsCase::Case4:
      return 2 * ta2a(m, r) + r * tag(m, r) + r * trs(m, r);
  }
  return 0;
}

double moe_time_ms(const MoeLayerModel& m, double r) { return case_time_ms(m, case_at(m, r), r); }

double overlappable_ms(const MoeLayerModel& model, double r) {
  MoeLayerModel m = model;
  m.t_gar_ms = 0;
  switch (case_at(m, r)) {
    case FsCase::Case2:
      return r * texp(m, r) + tag(m, r) + trs(m, r) - 2 * (r - 1) * ta2a(m, r);
    case FsCase::Case3:
      return tag(m, r) + trs(m, r);
    case FsCase::Case4:
      return r * tag(m, r) + r * trs(m, r) - 2 * (r - 1) * ta2a(m, r);
    case FsCase::Case1:
      return 0;
  }
  return 0;
}

DegreeChoice brute_force_degree(const MoeLayerModel& m, const std::vector<std::int64_t>& allowed) {
  MOEPLAN_CHECK(!allowed.empty(), "no allowed degree");
  auto at = [&m](std::int64_t r) {
    const double rr = static_cast<double>(r);
    const FsCase c = case_at(m, rr);
    return DegreeChoice{r, case_time_ms(m, c, rr), c};  // moe_time_ms, its case found once
  };
  DegreeChoice best = at(allowed.front());
  for (std::int64_t r : allowed) {
    const DegreeChoice c = at(r);
    if (better(c, best)) best = c;
  }
  return best;
}

GarDegreeTable::GarDegreeTable(const MoeLayerModel& model, const std::vector<std::int64_t>& allowed) {
  MOEPLAN_CHECK(!allowed.empty(), "no allowed degree");
  MoeLayerModel m = model;
  m.t_gar_ms = 0;
  for (std::int64_t degree : allowed) {
    const double r = static_cast<double>(degree);
    Degree d;
    d.r = degree;
    d.q1 = q1(m, r) > 0;
    d.q2 = q2(m, r) > 0;
    d.q3 = q3(m, r) > 0;
    // q4..q7 are t_gar - (these), as written there.
    d.q4_rhs = tag(m, r) + trs(m, r);
    d.q5_rhs = r * texp(m, r) - 2 * (r - 1) * ta2a(m, r) + tag(m, r) + trs(m, r);
    d.q6_rhs = r * tag(m, r) + r * trs(m, r) - 2 * (r - 1) * ta2a(m, r);
    d.q7_rhs = tag(m, r) + trs(m, r) + r * texp(m, r) - 2 * (r - 1) * ta2a(m, r);
    // case_time_ms's formulas; Case 1's is 2 r ta2a + t_gar.
    d.case1_without_gar = 2 * r * ta2a(m, r);
    d.case2 = case_time_ms(m, FsCase::Case2, r);
    d.case3 = case_time_ms(m, FsCase::Case3, r);
    d.case4 = case_time_ms(m, FsCase::Case4, r);
    degrees_.push_back(d);
  }
}

DegreeChoice GarDegreeTable::best(double t_gar_ms) const {
  auto choice = [t_gar_ms](const Degree& d) {
    FsCase c;  // case_at's tree
    if (d.q1) {
      if (!d.q2)
        c = t_gar_ms - d.q4_rhs > 0 ? FsCase::Case1 : FsCase::Case3;
      else
        c = t_gar_ms - d.q5_rhs > 0 ? FsCase::Case1 : FsCase::Case2;
    } else if (!d.q3) {
      c = t_gar_ms - d.q6_rhs > 0 ? FsCase::Case1 : FsCase::Case4;
    } else {
      c = t_gar_ms - d.q7_rhs > 0 ? FsCase::Case1 : FsCase::Case2;
    }
    const double t = c == FsCase::Case1   ? d.case1_without_gar + t_gar_ms
                     : c == FsCase::Case2 ? d.case2
                     : c == FsCase::Case3 ? d.case3
                                          : d.case4;
    return DegreeChoice{d.r, t, c};
  };
  DegreeChoice best = choice(degrees_.front());
  for (const Degree& d : degrees_) {
    const DegreeChoice c = choice(d);
    if (better(c, best)) best = c;
  }
  return best;
}

DegreeChoice find_optimal_degree(const MoeLayerModel& m, const std::vector<std::int64_t>& allowed) {
  MOEPLAN_CHECK(!allowed.empty(), "no allowed degree");
  const double r_max = static_cast<double>(std::max<std::int64_t>(allowed.back(), 1));
  std::optional<DegreeChoice> best;
  const FsCase cases[] = {FsCase::Case1, FsCase::Case2, FsCase::Case3, FsCase::Case4};
  for (FsCase c : cases) {
    for (const std::vector<Constraint>& conjunction : disjuncts(c)) {
      // Starting points across the range: the case regions are unions of intervals.
      for (double r0 : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0}) {
        if (r0 > r_max) continue;
        const std::optional<double> r_star = slsqp(m, c, conjunction, r0, r_max);
        if (!r_star) continue;
        // The allowed integers on either side of the continuous optimum.
        const auto above =
            std::lower_bound(allowed.begin(), allowed.end(), static_cast<std::int64_t>(std::ceil(*r_star - 1e-9)));
        std::vector<std::int64_t> neighbours;
        if (above != allowed.end()) neighbours.push_back(*above);
        if (above != allowed.begin()) neighbours.push_back(*(above - 1));
        for (std::int64_t r : neighbours) {
          const double rr = static_cast<double>(r);
          if (case_at(m, rr) != c) continue;  // the integer left the case: not feasible for f_c
          const DegreeChoice candidate{r, case_time_ms(m, c, rr), c};
          if (!best || better(candidate, *best)) best = candidate;
        }
      }
    }
  }
  if (!best) return brute_force_degree(m, allowed);  // no case yielded a feasible neighbour
  return *best;
}

std::vector<std::int64_t> allowed_degrees(std::int64_t capacity) {
  std::vector<std::int64_t> out;
  for (std::int64_t r = 1; r <= 32; ++r)
    if (capacity <= 0 || capacity % r == 0) out.push_back(r);
  return out;
}

std::vector<std::int64_t> released_solver_degrees() { return {1, 2, 4, 8}; }

PhaseDegrees choose_degrees(const MoeLayerModel& forward, const MoeLayerModel& backward,
                            const std::vector<std::int64_t>& allowed, const ReleasedSolverRules& rules) {
  if (!rules.enabled) return {find_optimal_degree(forward, allowed), find_optimal_degree(backward, allowed)};
  // tools/optim.py: Algorithm 1 over powers of two up to 8 (the continuous
  // optimum's allowed neighbours are the powers of two below and above it,
  // re-checked against the case), with two forcing rules.
  const std::vector<std::int64_t> powers = released_solver_degrees();
  auto at_one = [](const MoeLayerModel& m) { return DegreeChoice{1, moe_time_ms(m, 1.0), case_at(m, 1.0)}; };
  PhaseDegrees out;
  out.forward = forward.a2a.chunk_ms(1.0) < rules.forward_a2a_threshold_ms ? at_one(forward)
                                                                           : find_optimal_degree(forward, powers);
  out.backward = out.forward.r == 1 ? at_one(backward) : find_optimal_degree(backward, powers);
  return out;
}

const char* to_string(FsCase c) {
  switch (c) {
    case FsCase::Case1:
      return "Case1";
    case FsCase::Case2:
      return "Case2";
    case FsCase::Case3:
      return "Case3";
    case FsCase::Case4:
      return "Case4";
  }
  return "?";
}

}  // namespace moeplan::fsmoe
