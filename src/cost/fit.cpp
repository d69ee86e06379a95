#include <moeplan/cost/fit.hpp>

#include <cmath>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <Eigen/Dense>

#include <moeplan/core/error.hpp>
#include <moeplan/model/validate.hpp>

namespace moeplan::cost {
namespace {

[[noreturn]] void reject(const model::TimingSample& at, const std::string& reason) {
  throw Error(ErrorKind::Input, reason, "", at.where);
}

// R^2 below this is worth a warning: FSMoE Fig. 5's lines fit far better.
constexpr double kWarnR2 = 0.99;

}  // namespace

double r_squared(const std::vector<model::TimingSample>& samples, double alpha_ms, double beta) {
  double mean = 0;
  for (const auto& s : samples) mean += s.time_ms;
  mean /= static_cast<double>(samples.size());
  double ss_res = 0;
  double ss_tot = 0;
  for (const auto& s : samples) {
    const double r = s.time_ms - (alpha_ms + beta * s.size);
    ss_res += r * r;
    ss_tot += (s.time_ms - mean) * (s.time_ms - mean);
  }
  if (ss_tot == 0) return ss_res == 0 ? 1.0 : 0.0;
  return 1.0 - ss_res / ss_tot;
}

LineFit fit_line(const std::vector<model::TimingSample>& samples) {
  MOEPLAN_CHECK(!samples.empty(), "fit_line needs samples");
  std::set<double> sizes;
  for (const auto& s : samples) {
    if (!std::isfinite(s.size) || !std::isfinite(s.time_ms)) reject(s, "size and time must be finite numbers");
    if (s.size < 0 || s.time_ms < 0) reject(s, "size and time must not be negative");
    if (s.size > model::kMaxSampleSize || s.time_ms > model::kMaxSampleTimeMs)
      reject(s, fmt::format("size {} or time {} ms is implausible: at most {} and {} ms", s.size, s.time_ms,
                            model::kMaxSampleSize, model::kMaxSampleTimeMs));
    sizes.insert(s.size);
  }
  if (sizes.size() < 3)
    reject(samples.front(), fmt::format("{} {} group {}: {} distinct sizes, a fit needs at least 3",
                                        model::to_string(samples.front().op), model::to_string(samples.front().link),
                                        samples.front().group, sizes.size()));
  const Eigen::Index n = static_cast<Eigen::Index>(samples.size());
  Eigen::MatrixXd design(n, 2);
  Eigen::VectorXd times(n);
  // Scale sizes so the normal equations stay well conditioned for FLOP counts of 1e12.
  const double scale = *sizes.rbegin() > 0 ? *sizes.rbegin() : 1.0;
  for (Eigen::Index i = 0; i < n; ++i) {
    design(i, 0) = 1.0;
    design(i, 1) = samples[static_cast<std::size_t>(i)].size / scale;
    times(i) = samples[static_cast<std::size_t>(i)].time_ms;
  }
  const Eigen::Vector2d coefficients = design.colPivHouseholderQr().solve(times);
  LineFit fit;
  fit.alpha_ms = coefficients(0);
  fit.beta_ms_per_unit = coefficients(1) / scale;
  if (fit.beta_ms_per_unit < 0)
    reject(samples.front(), fmt::format("{} {} group {}: fitted slope {:.4g} ms per unit is negative (time falls "
                                        "as size grows); check the input",
                                        model::to_string(samples.front().op), model::to_string(samples.front().link),
                                        samples.front().group, fit.beta_ms_per_unit));
  fit.points = static_cast<std::int64_t>(samples.size());
  fit.r2 = r_squared(samples, fit.alpha_ms, fit.beta_ms_per_unit);
  for (const auto& s : samples) fit.residuals_ms.push_back(s.time_ms - (fit.alpha_ms + fit.beta_ms_per_unit * s.size));
  return fit;
}

LineFit fit_line_through_origin(const std::vector<model::TimingSample>& samples) {
  LineFit fit = fit_line(samples);  // the same input checks
  double nt = 0, nn = 0;
  for (const auto& s : samples) {
    nt += s.size * s.time_ms;
    nn += s.size * s.size;
  }
  fit.alpha_ms = 0;
  fit.beta_ms_per_unit = nn > 0 ? nt / nn : 0.0;
  fit.r2 = r_squared(samples, 0.0, fit.beta_ms_per_unit);
  fit.residuals_ms.clear();
  for (const auto& s : samples) fit.residuals_ms.push_back(s.time_ms - fit.beta_ms_per_unit * s.size);
  return fit;
}

ProfileFit fit_profile(const std::vector<model::TimingSample>& samples, const std::string& name,
                       const std::string& cluster) {
  using Key = std::tuple<model::OpClass, model::LinkClass, std::int64_t, std::optional<std::int64_t>>;
  std::vector<Key> order;
  std::vector<std::vector<model::TimingSample>> groups;
  for (const auto& s : samples) {
    const Key key{s.op, s.link, s.group, s.ranks_per_node};
    std::size_t i = 0;
    while (i < order.size() && order[i] != key) ++i;
    if (i == order.size()) {
      order.push_back(key);
      groups.emplace_back();
    }
    groups[i].push_back(s);
  }
  ProfileFit result;
  result.profile.name = name;
  result.profile.cluster = cluster;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& [op, link, group, ranks_per_node] = order[i];
    LineFit fit = fit_line(groups[i]);
    LineReport report{fit.r2, false};
    const std::string what = fmt::format("{} {} group {}", model::to_string(op), model::to_string(link), group);
    if (fit.alpha_ms < 0) {
      // A negative startup has no physical meaning; clamping it alone would
      // leave a slope fitted for the wrong intercept, so refit with alpha = 0.
      const LineFit origin = fit_line_through_origin(groups[i]);
      result.warnings.push_back(fmt::format(
          "{}: fitted startup {:.4g} ms is negative; refitted through the origin: beta {:.4g} (was {:.4g}), "
          "r^2 {:.6f} (with intercept {:.6f})",
          what, fit.alpha_ms, origin.beta_ms_per_unit, fit.beta_ms_per_unit, origin.r2, fit.r2));
      fit = origin;
      report.through_origin = true;
    }
    if (fit.r2 < kWarnR2) result.warnings.push_back(fmt::format("{}: r^2 = {:.4f} is below {}", what, fit.r2, kWarnR2));
    model::LinearCostSpec line;
    line.op = op;
    line.link = link;
    line.group = group;
    line.ranks_per_node = ranks_per_node;
    line.alpha_ms = fit.alpha_ms;
    line.beta_ms_per_unit = fit.beta_ms_per_unit;
    line.r2 = fit.r2;
    line.points = fit.points;
    line.provenance = model::Provenance::Measured;
    line.source = fmt::format("least-squares fit of {} points (moeplan fit)", fit.points);
    // The line must be one that the profile loader accepts (plausible alpha and
    // beta, src/model/validate.cpp): a fit is refused rather than written as a
    // profile that no later command can read.
    try {
      model::validate_cost_line(line, "");
    } catch (const Error& e) {
      reject(groups[i].front(), fmt::format("{}: fitted line refused: {}: {}", what, e.field(), e.reason()));
    }
    result.profile.costs.push_back(line);
    result.reports.push_back(report);
  }
  return result;
}

}  // namespace moeplan::cost
