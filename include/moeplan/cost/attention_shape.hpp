#pragma once
// An attention task's time from its shape (docs/cost-model.md, "Attention
// shape model"). A task the schedules price as "attention" carries the whole
// multi-head attention of its tokens: the Q, K, V and O projections (GEMMs of
// tokens x d_model x heads head_dim) and the causal core. One line over the
// task's FLOPs cannot price both: the projections run at GEMM rates and the
// core pays, per score, a mask, a scale and an exp that its FLOP count hides.
// The shape model prices the projections by the GEMM shape model (or the gemm
// line) and the core, tile by tile as a blocked kernel (FlashAttention, or the
// host executor's kernel) computes it, as
//   t_core = alpha + matmul_ms_per_gflop x 4 head_dim S / 1e9 + score_ms_per_melement x S / 1e6,
// S = heads x the scores of the tiles computed (block_rows query rows at a
// time, each against every key up to the block's last row).
// The executor replays the same decomposition (exec/replay_plan.hpp), so what
// is measured is what was priced.

#include <cstdint>
#include <vector>

#include <moeplan/cost/gemm_shape_model.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// Scores one head computes for `queries` queries after `context - queries`
/// earlier tokens, in blocks of block_rows query rows, each block against the
/// keys up to its last row: sum over blocks of rows x (context - queries + b0 + rows).
/// Hand check: q = c = 128, block 64: 64 x 64 + 64 x 128 = 12,288 (the causal
/// pairs are 128 x 129 / 2 = 8,256; the diagonal blocks' upper halves are computed and masked).
double attention_tile_scores(std::int64_t queries, std::int64_t context, std::int64_t block_rows);

/// @brief What one attention task does: the causal core over `heads` heads
/// (every sequence's heads together) and the projection GEMMs of its tokens.
struct AttentionTaskShape {
  std::int64_t queries = 0;
  std::int64_t context = 0;
  std::int64_t heads = 0;     ///< heads x sequences the task covers (at least 1)
  std::int64_t head_dim = 0;
  /// GEMMs (m = tokens, k = d_model, n = heads x head_dim of Q/O or kv_heads x head_dim of K/V), one kernel each.
  std::vector<GemmShape> projections;
};

/// The task of `flops` FLOPs (as a schedule priced it: sequences x
/// attention_flops(queries, context), backward 2x) split into what it does:
/// sequences = flops / attention_flops of one sequence; heads =
/// round(sequences x num_heads), projection rows = round(sequences x queries),
/// both at least 1. Input error for a model without heads, head_dim or
/// d_model, and for multi-head latent attention (model.mla: other projections).
AttentionTaskShape attention_task_shape(const model::ModelSpec& model, std::int64_t queries, std::int64_t context,
                                        double flops);

/// The core's time by the model: alpha + matmul x 4 head_dim S / 1e9 + score x S / 1e6 (ms).
double attention_core_ms(const model::AttentionShapeModelSpec& model, std::int64_t queries, std::int64_t context,
                         std::int64_t heads, std::int64_t head_dim);

/// The regressors of the core's time: x_matmul = 4 head_dim S / 1e9, x_score = S / 1e6.
struct AttentionRegressors {
  double matmul_gflop = 0;
  double score_melement = 0;
};
AttentionRegressors attention_regressors(std::int64_t block_rows, std::int64_t queries, std::int64_t context,
                                         std::int64_t heads, std::int64_t head_dim);

/// @brief One measured attention core.
struct AttentionPoint {
  std::int64_t queries = 0, context = 0, heads = 0, head_dim = 0;
  double time_ms = 0;
};

/// alpha, matmul_ms_per_gflop and score_ms_per_melement fitted by least
/// squares (Eigen) to the points at block_rows; a coefficient that comes out
/// negative is dropped (set to 0) and the rest refitted, so every term stays a
/// cost. r2 and points are set; provenance MEASURED. Runtime error for fewer
/// than 4 points or a fit with no positive term.
model::AttentionShapeModelSpec fit_attention_shape(std::int64_t block_rows, const std::vector<AttentionPoint>& points);

}  // namespace moeplan::cost
