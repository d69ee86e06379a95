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

/// @brief A fitted profile and the warnings the fit raised (r^2 < 0.99, clamped intercepts).
struct ProfileFit {
  model::CostProfileSpec profile;
  std::vector<std::string> warnings;
};

/// Groups samples by (op, link, group) in first-seen order and fits each group.
ProfileFit fit_profile(const std::vector<model::TimingSample>& samples, const std::string& name,
                       const std::string& cluster);

}  // namespace moeplan::cost
