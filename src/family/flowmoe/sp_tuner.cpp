#include <moeplan/family/flowmoe/sp_tuner.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include <Eigen/Dense>

#include <moeplan/core/error.hpp>

namespace moeplan::flowmoe {
namespace {

// Points live on u in [0, 1]: log(bytes) scaled between the bounds, since the
// trade-off (startup cost vs blocking) acts on the order of magnitude of Sp.
struct Space {
  double lo, hi;  // log bytes
  std::int64_t bytes(double u) const { return static_cast<std::int64_t>(std::llround(std::exp(lo + u * (hi - lo)))); }
};

Space space(std::int64_t min_bytes, std::int64_t max_bytes) {
  MOEPLAN_CHECK(min_bytes >= 1, "chunk sizes are positive");
  const double lo = std::log(static_cast<double>(min_bytes));
  const double hi = std::log(static_cast<double>(std::max(max_bytes, min_bytes)));
  return {lo, hi};
}

double matern52(double distance, double length) {
  const double a = std::sqrt(5.0) * distance / length;
  return (1.0 + a + a * a / 3.0) * std::exp(-a);
}

// Gaussian-process posterior on standardised observations.
class Gp {
 public:
  Gp(const std::vector<double>& x, const std::vector<double>& y, double length) : x_(x), length_(length) {
    const Eigen::Index n = static_cast<Eigen::Index>(x.size());
    Eigen::MatrixXd k(n, n);
    for (Eigen::Index i = 0; i < n; ++i)
      for (Eigen::Index j = 0; j < n; ++j)
        k(i, j) = matern52(std::abs(x[static_cast<std::size_t>(i)] - x[static_cast<std::size_t>(j)]), length);
    k.diagonal().array() += kJitter;
    llt_.compute(k);
    Eigen::VectorXd yy(n);
    for (Eigen::Index i = 0; i < n; ++i) yy(i) = y[static_cast<std::size_t>(i)];
    alpha_ = llt_.solve(yy);
    // log marginal likelihood, for choosing the length scale
    const Eigen::MatrixXd l = llt_.matrixL();
    log_likelihood_ = -0.5 * yy.dot(alpha_) - l.diagonal().array().log().sum();
  }
  void predict(double u, double& mean, double& sd) const {
    const Eigen::Index n = static_cast<Eigen::Index>(x_.size());
    Eigen::VectorXd ks(n);
    for (Eigen::Index i = 0; i < n; ++i) ks(i) = matern52(std::abs(u - x_[static_cast<std::size_t>(i)]), length_);
    mean = ks.dot(alpha_);
    const Eigen::VectorXd v = llt_.matrixL().solve(ks);
    sd = std::sqrt(std::max(0.0, 1.0 + kJitter - v.squaredNorm()));
  }
  double log_likelihood() const { return log_likelihood_; }

 private:
  static constexpr double kJitter = 1e-6;  // the simulator is deterministic: almost no noise
  std::vector<double> x_;
  double length_;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  Eigen::VectorXd alpha_;
  double log_likelihood_ = 0;
};

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

TunerResult finish(std::vector<TunerSample> trace) {
  TunerResult r;
  r.trace = std::move(trace);
  for (const TunerSample& s : r.trace)
    if (r.best_bytes == 0 || s.iteration_ms < r.best_ms ||
        (s.iteration_ms == r.best_ms && s.chunk_bytes < r.best_bytes)) {
      r.best_bytes = s.chunk_bytes;
      r.best_ms = s.iteration_ms;
    }
  return r;
}

}  // namespace

TunerResult tune_bayesian(const ChunkObjective& objective, std::int64_t min_bytes, std::int64_t max_bytes,
                          const BayesSettings& settings) {
  const Space sp = space(min_bytes, max_bytes);
  std::mt19937_64 rng(settings.seed);
  std::vector<double> us;
  std::vector<TunerSample> trace;
  auto sample = [&](double u) {
    const std::int64_t bytes = sp.bytes(u);
    us.push_back(u);
    trace.push_back({bytes, objective(bytes)});
  };
  sample(std::uniform_real_distribution<double>(0.0, 1.0)(rng));  // one seeded random initial sample
  while (static_cast<std::int32_t>(trace.size()) < settings.samples) {
    // Standardise the observations.
    double mean = 0, var = 0;
    for (const TunerSample& s : trace) mean += s.iteration_ms;
    mean /= static_cast<double>(trace.size());
    for (const TunerSample& s : trace) var += (s.iteration_ms - mean) * (s.iteration_ms - mean);
    const double scale = trace.size() > 1 && var > 0 ? std::sqrt(var / static_cast<double>(trace.size())) : 1.0;
    std::vector<double> y;
    double best = std::numeric_limits<double>::infinity();
    for (const TunerSample& s : trace) {
      y.push_back((s.iteration_ms - mean) / scale);
      best = std::min(best, y.back());
    }
    // Length scale by marginal likelihood over a small grid (u spans [0, 1]).
    std::optional<Gp> gp;
    for (double length : {0.05, 0.1, 0.2, 0.35, 0.6, 1.0}) {
      Gp candidate(us, y, length);
      if (!gp || candidate.log_likelihood() > gp->log_likelihood()) gp.emplace(candidate);
    }
    // Expected Improvement (minimisation), maximised over a grid of candidates
    // that includes both ends of the space: one chunk per whole tensor (u = 1) is
    // often the best Sp when the pool has no gaps to fill.
    double best_ei = -1, best_u = 0;
    const double steps = static_cast<double>(std::max(settings.candidates - 1, 1));
    for (std::int32_t i = 0; i < settings.candidates; ++i) {
      const double u = static_cast<double>(i) / steps;
      bool taken = false;
      for (double seen : us) taken = taken || sp.bytes(seen) == sp.bytes(u);
      if (taken) continue;
      double mu = 0, sd = 0;
      gp->predict(u, mu, sd);
      const double improvement = best - mu - settings.xi;
      const double ei = sd > 1e-12 ? improvement * normal_cdf(improvement / sd) + sd * normal_pdf(improvement / sd)
                                   : std::max(improvement, 0.0);
      if (ei > best_ei) {
        best_ei = ei;
        best_u = u;
      }
    }
    if (best_ei < 0) break;  // every candidate already sampled
    sample(best_u);
  }
  return finish(std::move(trace));
}

TunerResult tune_grid(const ChunkObjective& objective, std::int64_t min_bytes, std::int64_t max_bytes,
                      std::int32_t points) {
  const Space sp = space(min_bytes, max_bytes);
  std::vector<TunerSample> trace;
  for (std::int32_t i = 0; i < points; ++i) {
    const double u = points == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(points - 1);
    const std::int64_t bytes = sp.bytes(u);
    trace.push_back({bytes, objective(bytes)});
  }
  return finish(std::move(trace));
}

TunerResult tune_random(const ChunkObjective& objective, std::int64_t min_bytes, std::int64_t max_bytes,
                        std::uint64_t seed) {
  const Space sp = space(min_bytes, max_bytes);
  std::mt19937_64 rng(seed);
  const std::int64_t bytes = sp.bytes(std::uniform_real_distribution<double>(0.0, 1.0)(rng));
  return finish({{bytes, objective(bytes)}});
}

bool needs_retune(double observed_ms, double predicted_best_ms, double delta) {
  MOEPLAN_CHECK(predicted_best_ms > 0, "a predicted iteration time is positive");
  return std::abs(observed_ms - predicted_best_ms) / predicted_best_ms > delta;
}

}  // namespace moeplan::flowmoe
