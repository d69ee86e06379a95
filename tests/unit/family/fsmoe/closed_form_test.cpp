#include <catch2/catch.hpp>

#include <random>

#include <moeplan/family/fsmoe/closed_form.hpp>

using namespace moeplan::fsmoe;

namespace {

MoeLayerModel layer(double a2a_ms, double ag_ms, double rs_ms, double exp_ms, double t_gar_ms) {
  // Whole-operation times with a small startup each: n = 1, beta = time - alpha.
  const double alpha = 0.05;
  return MoeLayerModel{{alpha, a2a_ms - alpha, 1},
                       {alpha, ag_ms - alpha, 1},
                       {alpha, rs_ms - alpha, 1},
                       {alpha, exp_ms - alpha, 1},
                       t_gar_ms};
}

}  // namespace

TEST_CASE("fsmoe::case_at reaches each of FSMoE's four cases", "[plan][fsmoe]") {
  // r = 2 throughout; chunk times are alpha + (t - alpha) / 2.
  SECTION("Case1: a large Gradient-AllReduce makes inter-node traffic dominate") {
    const MoeLayerModel m = layer(4.0, 1.0, 1.0, 1.0, 20.0);
    // Q1 (2.025 > 0.525), not Q2 (2 x 0.525 < 2 x 2.025), Q4 (20 > 1.05): Case1.
    // t1 = 2 r t_a2a + t_gar = 4 x 2.025 + 20 = 28.1.
    CHECK(case_at(m, 2) == FsCase::Case1);
    CHECK(moe_time_ms(m, 2) == Approx(28.1));
  }
  SECTION("Case2: experts dominate") {
    const MoeLayerModel m = layer(1.0, 0.5, 0.5, 10.0, 0.0);
    // chunks: a2a 0.525, ag 0.275, rs 0.275, exp 5.025. Q1, Q2 (10.05 > 1.05), not Q5.
    // t2 = 2 x 0.525 + 0.275 + 0.275 + 2 x 5.025 = 11.65.
    CHECK(case_at(m, 2) == FsCase::Case2);
    CHECK(moe_time_ms(m, 2) == Approx(11.65));
  }
  SECTION("Case3: AlltoAll dominates, no gradient to hide") {
    const MoeLayerModel m = layer(4.0, 1.0, 1.0, 1.0, 0.0);
    // Q1, not Q2, not Q4 (0 < 1.05). t3 = 2 r t_a2a + t_ag + t_rs = 8.1 + 1.05 = 9.15.
    CHECK(case_at(m, 2) == FsCase::Case3);
    CHECK(moe_time_ms(m, 2) == Approx(9.15));
  }
  SECTION("Case4: intra-node AllGather/ReduceScatter dominate") {
    const MoeLayerModel m = layer(1.0, 4.0, 4.0, 1.0, 0.0);
    // chunks: a2a 0.525, ag = rs = 2.025, exp 0.525. Not Q1, not Q3 (1.05 < 4.05), not Q6.
    // t4 = 2 t_a2a + r t_ag + r t_rs = 1.05 + 4.05 + 4.05 = 9.15.
    CHECK(case_at(m, 2) == FsCase::Case4);
    CHECK(moe_time_ms(m, 2) == Approx(9.15));
  }
}

TEST_CASE("fsmoe::find_optimal_degree equals brute force over the allowed degrees", "[plan][fsmoe][property]") {
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto log_uniform = [&](double lo, double hi) { return lo * std::pow(hi / lo, unit(rng)); };
  int same_default = 0, same_released = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    MoeLayerModel m;
    // Testbed-like ranges: startups 0.01-0.6 ms, whole-op times 0.1-100 ms.
    for (AlphaBeta* ab : {&m.a2a, &m.ag, &m.rs, &m.exp}) {
      ab->alpha_ms = log_uniform(0.01, 0.6);
      ab->n = 1e6;
      ab->beta_ms = log_uniform(0.1, 100.0) / ab->n;
    }
    m.t_gar_ms = unit(rng) < 0.5 ? 0.0 : log_uniform(0.1, 200.0);
    const std::int64_t capacity = static_cast<std::int64_t>(log_uniform(1, 5000));
    const std::vector<std::int64_t> allowed = allowed_degrees(unit(rng) < 0.3 ? 0 : capacity);
    const DegreeChoice slsqp = find_optimal_degree(m, allowed);
    const DegreeChoice brute = brute_force_degree(m, allowed);
    INFO("trial " << trial << " slsqp r " << slsqp.r << " brute r " << brute.r);
    CHECK(slsqp.t_moe_ms == Approx(brute.t_moe_ms).epsilon(1e-12));  // ties allowed: the time matches
    same_default += slsqp.t_moe_ms == Approx(brute.t_moe_ms).epsilon(1e-12);
    const DegreeChoice released = find_optimal_degree(m, released_solver_degrees());
    const DegreeChoice released_brute = brute_force_degree(m, released_solver_degrees());
    CHECK(released.t_moe_ms == Approx(released_brute.t_moe_ms).epsilon(1e-12));
    same_released += released.t_moe_ms == Approx(released_brute.t_moe_ms).epsilon(1e-12);
  }
  CHECK(same_default == 1000);
  CHECK(same_released == 1000);
}

TEST_CASE("fsmoe::choose_degrees applies the released solver's rules", "[plan][fsmoe]") {
  MoeLayerModel fwd = layer(0.8, 0.5, 0.5, 2.0, 0.0);  // unchunked A2A 0.8 ms < 1 ms
  MoeLayerModel bwd = layer(0.8, 0.5, 0.5, 4.0, 5.0);
  const PhaseDegrees released = choose_degrees(fwd, bwd, allowed_degrees(0), {true, 1.0});
  CHECK(released.forward.r == 1);
  CHECK(released.backward.r == 1);  // forced because forward is 1
  fwd = layer(8.0, 0.5, 0.5, 8.0, 0.0);
  bwd = layer(8.0, 0.5, 0.5, 16.0, 0.0);
  const PhaseDegrees powers = choose_degrees(fwd, bwd, allowed_degrees(0), {true, 1.0});
  for (std::int64_t r : {powers.forward.r, powers.backward.r}) CHECK((r == 1 || r == 2 || r == 4 || r == 8));
  const PhaseDegrees paper = choose_degrees(fwd, bwd, allowed_degrees(0), {});
  CHECK(paper.forward.t_moe_ms <= powers.forward.t_moe_ms);
}

TEST_CASE("fsmoe::allowed_degrees divides the expert capacity", "[plan][fsmoe]") {
  CHECK(allowed_degrees(12) == std::vector<std::int64_t>{1, 2, 3, 4, 6, 12});
  CHECK(allowed_degrees(0).size() == 32);
  CHECK(allowed_degrees(64).back() == 32);
}

TEST_CASE("fsmoe::GarDegreeTable is brute force at every t_gar, bit for bit", "[plan][fsmoe]") {
  // The second formulation: t^moe(r) = moe_time_ms of the model with t_gar
  // set, at every allowed r, the smallest r on ties (the paper's definition,
  // written out here rather than taken from brute_force_degree).
  std::mt19937_64 rng(1125);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto log_uniform = [&](double lo, double hi) { return lo * std::pow(hi / lo, unit(rng)); };
  int compared = 0;
  for (int trial = 0; trial < 200; ++trial) {
    MoeLayerModel m;
    for (AlphaBeta* ab : {&m.a2a, &m.ag, &m.rs, &m.exp}) {
      ab->alpha_ms = log_uniform(0.01, 0.6);
      ab->n = 1e6;
      ab->beta_ms = log_uniform(0.1, 100.0) / ab->n;
    }
    const std::vector<std::int64_t> allowed = allowed_degrees(unit(rng) < 0.3 ? 0 : 64 * (1 + trial % 5));
    const GarDegreeTable table(m, allowed);
    for (int k = 0; k < 20; ++k) {
      m.t_gar_ms = k == 0 ? 0.0 : log_uniform(0.01, 300.0);
      std::int64_t best_r = allowed.front();
      double best_t = moe_time_ms(m, static_cast<double>(best_r));
      for (std::int64_t r : allowed) {
        const double t = moe_time_ms(m, static_cast<double>(r));
        if (t < best_t) {
          best_t = t;
          best_r = r;
        }
      }
      const DegreeChoice c = table.best(m.t_gar_ms);
      INFO("trial " << trial << " t_gar " << m.t_gar_ms);
      CHECK(c.r == best_r);
      CHECK(c.t_moe_ms == best_t);
      CHECK(c.which == case_at(m, static_cast<double>(best_r)));
      ++compared;
    }
  }
  CHECK(compared == 200 * 20);
}
