#include <moeplan/cost/gemm_shape_fit.hpp>

#include <algorithm>
#include <cmath>

#include <moeplan/core/error.hpp>

namespace moeplan::cost {
namespace {

// The compute side at efficiency 1.
double full_rate_compute_ms(model::GemmShapeModelSpec g, const GemmShape& s) {
  g.efficiency = 1;
  return gemm_compute_ms(g, s);
}

struct Line {
  double alpha = 0;
  double slope = 0;
};

Line least_squares(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double det = n * sxx - sx * sx;
  Line l;
  if (x.size() >= 2 && det > 0) {
    l.slope = (n * sxy - sx * sy) / det;
    l.alpha = (sy - l.slope * sx) / n;
  }
  if (x.size() < 2 || det <= 0 || l.alpha < 0) l = {0, sxy / sxx};  // through the origin
  return l;
}

}  // namespace

double highest_tile_rate(const model::GemmShapeModelSpec& base, const std::vector<GemmPoint>& points) {
  model::GemmShapeModelSpec unit = base;
  unit.peak_flops_per_s = 1;  // compute ms at 1 FLOP/s, i.e. the tiles' FLOPs x 1e3 / units
  double best = 0;
  for (const GemmPoint& p : points)
    if (p.time_ms > 0) best = std::max(best, full_rate_compute_ms(unit, p.shape) / p.time_ms);
  MOEPLAN_CHECK(best > 0, "a peak from measured GEMMs needs a point with a positive time");
  return best;
}

model::GemmShapeModelSpec fit_gemm_shape(model::GemmShapeModelSpec g, const std::vector<GemmPoint>& points) {
  double efficiency = 1;
  Line line;
  std::size_t used = 0;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<double> x, y;
    for (const GemmPoint& p : points) {
      const double compute = full_rate_compute_ms(g, p.shape);
      if (compute / efficiency < gemm_memory_ms(g, p.shape)) continue;  // memory-bound: not this line's
      x.push_back(compute);
      y.push_back(p.time_ms);
    }
    if (x.empty())
      throw Error(ErrorKind::Runtime, "GEMM shape fit: no measured GEMM is compute-bound under the model");
    line = least_squares(x, y);
    used = x.size();
    efficiency = line.slope > 0 ? 1 / line.slope : 1;
    if (efficiency > 1) {
      // Faster than the best tile rate on the line: cap, alpha the mean residual.
      efficiency = 1;
      double residual = 0;
      for (std::size_t i = 0; i < x.size(); ++i) residual += y[i] - x[i];
      line.alpha = std::max(0.0, residual / static_cast<double>(x.size()));
    }
  }
  g.efficiency = efficiency;
  g.alpha_ms = line.alpha;
  double mean = 0;
  for (const GemmPoint& p : points) mean += p.time_ms;
  mean /= static_cast<double>(points.size());
  double ss_res = 0, ss_tot = 0;
  for (const GemmPoint& p : points) {
    ss_res += std::pow(p.time_ms - gemm_time_ms(g, p.shape), 2);
    ss_tot += std::pow(p.time_ms - mean, 2);
  }
  g.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1.0;
  g.points = static_cast<std::int64_t>(used);
  return g;
}

}  // namespace moeplan::cost
