#include <moeplan/cost/gemm_shape_model.hpp>

#include <algorithm>
#include <cmath>

#include <moeplan/core/error.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {
}  // namespace

double gemm_flops(const GemmShape& s) { return 2.0 * s.m * s.n * s.k * s.batch; }

double output_tiles(const GemmShape& s, std::int64_t tile_m, std::int64_t tile_n) {
  MOEPLAN_CHECK(tile_m > 0 && tile_n > 0, "tiles have a positive size");
  MOEPLAN_CHECK(s.m >= 0 && s.n >= 0 && s.k >= 0 && s.batch >= 0, "a GEMM shape is not negative");
  // Rows may be a mean over experts (fractional): a started tile is a whole tile.
  return s.batch * std::ceil(s.m / as_double(tile_m)) * std::ceil(s.n / as_double(tile_n));
}

double tile_waves(double tiles, std::int64_t units) {
  MOEPLAN_CHECK(units > 0, "a device has at least one unit");
  return std::ceil(tiles / as_double(units));
}

double split_k(double tiles, std::int64_t units) {
  if (tiles <= 0 || tiles >= as_double(units)) return 1.0;
  return std::floor(as_double(units) / tiles);
}

double gemm_compute_ms(const model::GemmShapeModelSpec& g, const GemmShape& s) {
  const double tiles = output_tiles(s, g.tile_m, g.tile_n);
  const double split = split_k(tiles, g.units);
  const double waves = tile_waves(tiles * split, g.units);
  const double flops_per_tile = 2.0 * as_double(g.tile_m) * as_double(g.tile_n) * s.k / split;
  if (s.fp8 && !(g.peak_flops_per_s_fp8 > 0))
    throw Error(ErrorKind::Input, "the GEMM shape model has no FP8 peak: it cannot price FP8 GEMMs",
                "gemm_shape.peak_tflops_fp8");
  const double peak = s.fp8 ? g.peak_flops_per_s_fp8 : g.peak_flops_per_s;
  const double unit_flops_per_s = peak / as_double(g.units) * g.efficiency;
  return waves * flops_per_tile / unit_flops_per_s * kMsPerSecond;
}

double gemm_memory_ms(const model::GemmShapeModelSpec& g, const GemmShape& s) {
  MOEPLAN_CHECK(s.element_bytes > 0, "a GEMM shape names its element size (the model's dtype_bytes)");
  const double operand_bytes = s.fp8 ? 1.0 : s.element_bytes;
  const double output_bytes = s.accumulate_bytes > 0 ? s.accumulate_bytes : s.element_bytes;
  const double bytes = s.batch * ((s.m * s.k + s.k * s.n) * operand_bytes + s.m * s.n * output_bytes);
  return bytes / g.memory_bytes_per_s * kMsPerSecond;
}

double gemm_time_ms(const model::GemmShapeModelSpec& g, const GemmShape& s) {
  // A grouped GEMM's products each pay product_alpha (one launch per expert);
  // a single GEMM pays alpha alone.
  const double products = s.batch > 1 ? s.batch * g.product_alpha_ms : 0.0;
  return g.alpha_ms + products + std::max(gemm_compute_ms(g, s), gemm_memory_ms(g, s));
}

// Transformer Engine's FP8 recipes run both gradients' GEMMs in FP8 too (E5M2
// gradients under the hybrid format), so the flag carries over.
GemmShape input_gradient_shape(const GemmShape& f) { return {f.m, f.k, f.n, f.batch, f.element_bytes, f.fp8, 0.0}; }
GemmShape weight_gradient_shape(const GemmShape& f, double main_grad_bytes) {
  return {f.k, f.n, f.m, f.batch, f.element_bytes, f.fp8, 2.0 * main_grad_bytes};
}

}  // namespace moeplan::cost
