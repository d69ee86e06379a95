#pragma once
// Fitting t = alpha + n * beta to timed samples by least squares (Eigen),
// with the checks that keep a profile honest.

#include <cstdint>
#include <string>
#include <vector>

#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief A fitted line and how well it fits.
struct LineFit {
  double alpha_ms = 0;
  double beta_ms_per_unit = 0;
  double r2 = 0;
  std::int64_t points = 0;
  std::vector<double> residuals_ms;  ///< measured - predicted, in input order
};

/// Least-squares fit of time_ms against size. Input errors (naming the first
/// offending sample's file and line): fewer than 3 distinct sizes, NaN/inf or
/// negative values, a negative slope.
LineFit fit_line(const std::vector<model::TimingSample>& samples);

/// R^2 = 1 - SS_res / SS_tot of a line on samples (1 when all times are equal and fitted).
double r_squared(const std::vector<model::TimingSample>& samples, double alpha_ms, double beta_ms_per_unit);

/// Least-squares fit of time_ms against size through the origin (alpha = 0):
/// beta = sum(n t) / sum(n^2), for lines whose free fit has a negative intercept.
LineFit fit_line_through_origin(const std::vector<model::TimingSample>& samples);

/// @brief How one line of a fitted profile came about.
struct LineReport {
  double r2_with_intercept = 0;  ///< r^2 of the free fit
  bool through_origin = false;   ///< the free fit's intercept was negative: refitted with alpha = 0
};

/// @brief A fitted profile, one report per line, and the warnings the fit raised
/// (r^2 < 0.99, negative intercepts refitted through the origin).
struct ProfileFit {
  model::CostProfileSpec profile;
  std::vector<LineReport> reports;  ///< parallel to profile.costs
  std::vector<std::string> warnings;
};

/// Groups samples by (op, link, group, ranks per node) in first-seen order and fits each group.
ProfileFit fit_profile(const std::vector<model::TimingSample>& samples, const std::string& name,
                       const std::string& cluster);

}  // namespace moeplan::cost
