#pragma once
// Fitting a GEMM shape model's efficiency and startup to measured GEMMs
// (`moeplan calibrate`; docs/cost-model.md, "GEMM shape model").

#include <vector>

#include <moeplan/cost/gemm_shape_model.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief One measured GEMM: its shape (element size included) and median time.
struct GemmPoint {
  GemmShape shape;
  double time_ms = 0;
};

/// The highest rate any point reached on its tiles: max over the points of
/// (the compute side at efficiency 1 and peak 1 FLOP/s) / time, in FLOP/s.
/// A peak for a device without a datasheet figure (the host): the fitted
/// efficiency is then the share of the best measured kernel a full tile reaches.
double highest_tile_rate(const model::GemmShapeModelSpec& base, const std::vector<GemmPoint>& points);

/// `base` (units, tiles, peak, memory bandwidth given) with efficiency and
/// alpha_ms fitted by least squares to the points where the compute side
/// binds: t = alpha + C / efficiency, C the compute side at efficiency 1.
/// Points where the memory side binds (at the fitted efficiency) are left out,
/// refitted once. A negative intercept refits through the origin; an
/// efficiency above 1 is capped at 1 with alpha the mean residual (not below 0).
/// r2 (of gemm_time_ms against every point) and points are set. Throws
/// moeplan::Error (Runtime) when no point is compute-bound.
model::GemmShapeModelSpec fit_gemm_shape(model::GemmShapeModelSpec base, const std::vector<GemmPoint>& points);

}  // namespace moeplan::cost
