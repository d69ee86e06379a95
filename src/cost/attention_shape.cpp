#include <moeplan/cost/attention_shape.hpp>

#include <algorithm>
#include <array>
#include <cmath>

#include <Eigen/Dense>
#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {
std::int64_t at_least_one(double x) { return std::max<std::int64_t>(1, std::llround(x)); }
}  // namespace

double attention_tile_scores(std::int64_t queries, std::int64_t context, std::int64_t block_rows) {
  MOEPLAN_CHECK(queries > 0 && context >= queries && block_rows > 0, "an attention tiling is positive");
  // Closed form of sum_b rows_b (before + b0_b + rows_b): full blocks of B rows
  // at b0 = 0, B, ..., (n-1) B, then a last block of r rows at b0 = n B.
  const double before = as_double(context - queries);
  const double b = as_double(block_rows);
  const double full = std::floor(as_double(queries) / b);
  const double rest = as_double(queries) - full * b;
  const double full_blocks = b * (full * (before + b) + b * full * (full - 1.0) / 2.0);
  const double last = rest * (before + full * b + rest);
  return full_blocks + last;
}

AttentionTaskShape attention_task_shape(const model::ModelSpec& m, std::int64_t queries, std::int64_t context,
                                        double flops) {
  if (m.num_heads <= 0 || m.head_dim <= 0 || m.d_model <= 0)
    throw Error(ErrorKind::Input, fmt::format("model '{}': an attention task needs num_heads, head_dim and d_model "
                                              "(got {}, {}, {})",
                                              m.name, m.num_heads, m.head_dim, m.d_model));
  // MLA's low-rank projections are other GEMMs than Q, K, V, O of head_dim:
  // not priced by this model yet, so refused rather than priced as MHA.
  if (m.mla)
    throw Error(ErrorKind::Input,
                fmt::format("model '{}' uses multi-head latent attention (model.mla), which the profile's attention "
                            "shape model does not price yet; use a profile without attention_shape",
                            m.name),
                "profile.attention_shape");
  MOEPLAN_CHECK(queries > 0 && context >= queries && std::isfinite(flops) && flops >= 0,
                "an attention task has a shape and FLOPs");
  const double per_sequence = attention_flops(m, as_double(queries), as_double(context));
  const double sequences = flops / per_sequence;
  AttentionTaskShape s;
  s.queries = queries;
  s.context = context;
  s.head_dim = m.head_dim;
  s.heads = at_least_one(sequences * as_double(m.num_heads));
  const double rows = as_double(at_least_one(sequences * as_double(queries)));
  const double d = as_double(m.d_model);
  const double bytes = as_double(m.dtype_bytes);
  const double qo = as_double(m.num_heads * m.head_dim);
  const double kv = as_double((m.num_kv_heads > 0 ? m.num_kv_heads : m.num_heads) * m.head_dim);
  // Q and O: [tokens x d] x [d x heads head_dim] (O's input is the heads' output,
  // the same FLOPs); K and V: [tokens x d] x [d x kv_heads head_dim]
  // (cost::attention_projection_flops counts the same four).
  for (double n : {qo, kv, kv, qo}) s.projections.push_back({rows, n, d, 1.0, bytes});
  return s;
}

AttentionRegressors attention_regressors(std::int64_t block_rows, std::int64_t queries, std::int64_t context,
                                         std::int64_t heads, std::int64_t head_dim) {
  const double scores = as_double(heads) * attention_tile_scores(queries, context, block_rows);
  // Q K^T and P V: 2 multiply-adds of head_dim per score, 2 FLOPs each.
  return {4.0 * as_double(head_dim) * scores / 1e9, scores / 1e6};
}

double attention_core_ms(const model::AttentionShapeModelSpec& model, std::int64_t queries, std::int64_t context,
                         std::int64_t heads, std::int64_t head_dim) {
  const AttentionRegressors x = attention_regressors(model.block_rows, queries, context, heads, head_dim);
  return model.alpha_ms + model.matmul_ms_per_gflop * x.matmul_gflop + model.score_ms_per_melement * x.score_melement;
}

model::AttentionShapeModelSpec fit_attention_shape(std::int64_t block_rows, const std::vector<AttentionPoint>& points) {
  if (points.size() < 4)
    throw Error(ErrorKind::Runtime,
                fmt::format("attention shape fit: {} points, at least 4 needed for 3 terms", points.size()));
  const Eigen::Index n = static_cast<Eigen::Index>(points.size());
  Eigen::MatrixXd x(n, 3);
  Eigen::VectorXd t(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const AttentionPoint& p = points[static_cast<std::size_t>(i)];
    const AttentionRegressors r = attention_regressors(block_rows, p.queries, p.context, p.heads, p.head_dim);
    x(i, 0) = 1.0;
    x(i, 1) = r.matmul_gflop;
    x(i, 2) = r.score_melement;
    t(i) = p.time_ms;
  }
  // Least squares over the kept terms; a negative coefficient is not a cost:
  // drop the most negative term and refit (at most twice: three terms).
  std::array<bool, 3> kept{true, true, true};
  Eigen::Vector3d coef = Eigen::Vector3d::Zero();
  for (int round = 0; round < 3; ++round) {
    std::vector<Eigen::Index> cols;
    for (Eigen::Index j = 0; j < 3; ++j)
      if (kept[static_cast<std::size_t>(j)]) cols.push_back(j);
    if (cols.empty()) break;
    Eigen::MatrixXd a(n, static_cast<Eigen::Index>(cols.size()));
    for (std::size_t j = 0; j < cols.size(); ++j) a.col(static_cast<Eigen::Index>(j)) = x.col(cols[j]);
    const Eigen::VectorXd c = a.colPivHouseholderQr().solve(t);
    coef.setZero();
    for (std::size_t j = 0; j < cols.size(); ++j) coef(cols[j]) = c(static_cast<Eigen::Index>(j));
    Eigen::Index worst = 0;
    if (coef.minCoeff(&worst) >= 0) break;
    kept[static_cast<std::size_t>(worst)] = false;
    coef(worst) = 0;
  }
  if (!(coef(1) > 0 || coef(2) > 0) || !coef.allFinite() || coef.minCoeff() < 0)
    throw Error(ErrorKind::Runtime, "attention shape fit: no term of the core's time grows with its size");
  model::AttentionShapeModelSpec s;
  s.block_rows = block_rows;
  s.alpha_ms = coef(0);
  s.matmul_ms_per_gflop = coef(1);
  s.score_ms_per_melement = coef(2);
  s.provenance = model::Provenance::Measured;
  const Eigen::VectorXd predicted = x * coef;
  const double mean = t.mean();
  const double ss_tot = (t.array() - mean).square().sum();
  const double ss_res = (t - predicted).squaredNorm();
  s.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
  s.points = static_cast<std::int64_t>(points.size());
  return s;
}

}  // namespace moeplan::cost
