#pragma once
// A GEMM's time from its shape (docs/cost-model.md, "GEMM shape model"): a
// roofline with wave quantization. The output C[m x n] is cut into tiles of
// tile_m x tile_n; the device's units (SMs) each compute one tile at a time,
// so a GEMM takes ceil(tiles / units) whole waves, each tile doing
// 2 tile_m tile_n k FLOPs at the per-unit peak times an efficiency (an output
// of fewer tiles than units splits k over the idle units: split_k). A GEMM too
// small to fill the tiles' arithmetic is bound by the bytes of A, B and C
// crossing device memory instead. t = alpha + max(compute, memory).

#include <cstdint>

#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief C[m x n] = A[m x k] B[k x n], `batch` independent products of that
/// shape in one kernel (a grouped GEMM over the local experts).
struct GemmShape {
  double m = 0;      ///< rows of A and C (tokens)
  double n = 0;      ///< columns of B and C
  double k = 0;      ///< the reduction
  double batch = 1;  ///< products in the kernel
  /// Bytes of one element of A, B and C: the model's dtype_bytes (the memory
  /// side reads it; 0 is refused there, so a caller cannot forget it).
  double element_bytes = 0;
  /// A and B are FP8 (one byte each; a Transformer Engine FP8 recipe): the
  /// compute side runs at the FP8 peak, C is still written at element_bytes.
  bool fp8 = false;
  /// Bytes one element of C costs when the GEMM adds into C, read and
  /// written (a weight gradient added into Megatron-Core's main_grad by the
  /// GEMM itself, --gradient-accumulation-fusion, on by default with
  /// Transformer Engine: 2 x 4 B for fp32 main gradients, 2 x 2 B for bf16
  /// ones); 0: C is written once at element_bytes.
  double accumulate_bytes = 0;
};

/// Bytes one element of C costs when accumulated in fp32: read 4 + write 4.
inline constexpr double kFp32AccumulateBytes = 8.0;

/// 2 m n k x batch: the multiply-adds, 2 FLOPs each.
double gemm_flops(const GemmShape& shape);

/// Output tiles of all the batch's products: batch x ceil(m / tile_m) x ceil(n / tile_n).
double output_tiles(const GemmShape& shape, std::int64_t tile_m, std::int64_t tile_n);

/// Waves of tiles over the units: ceil(tiles / units) (a partial wave costs a whole one).
double tile_waves(double tiles, std::int64_t units);

/// Slices of the reduction when the output has fewer tiles than units
/// (split-K, as cuBLAS and CUTLASS do for a small output over a long k):
/// floor(units / tiles), else 1. The partial sums' reduction is left out.
double split_k(double tiles, std::int64_t units);

/// Compute side: ceil(tiles x split / units) waves x 2 tile_m tile_n (k / split)
/// / (peak / units x efficiency), in ms; the FP8 peak for an fp8 shape (an
/// input error, field gemm_shape.peak_tflops_fp8, when the model has none).
double gemm_compute_ms(const model::GemmShapeModelSpec& model, const GemmShape& shape);

/// Memory side: batch x (m k + k n + m n) elements of shape.element_bytes read
/// or written once (A and B at one byte when fp8; C at accumulate_bytes when
/// the GEMM accumulates into it), in ms.
double gemm_memory_ms(const model::GemmShapeModelSpec& model, const GemmShape& shape);

/// alpha + max(compute, memory), plus batch x product_alpha for a grouped
/// GEMM (batch > 1), in ms.
double gemm_time_ms(const model::GemmShapeModelSpec& model, const GemmShape& shape);

/// The backward pass of a forward GEMM (m, n, k): the input gradient
/// dA[m x k] = dC B^T (reduction n) and the weight gradient dB[k x n] = A^T dC
/// (reduction m); 2x the forward FLOPs. The weight gradient accumulates into
/// the main gradient of `main_grad_bytes` an element (model::main_grad_bytes:
/// 4 fp32, 2 under grad_reduce_in_bf16), read and written, as Megatron-Core's
/// fused gradient accumulation does.
GemmShape input_gradient_shape(const GemmShape& forward);
GemmShape weight_gradient_shape(const GemmShape& forward, double main_grad_bytes = 4.0);

}  // namespace moeplan::cost
