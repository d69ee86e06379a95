#include <moeplan/hostrt/host_kernels.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include <moeplan/core/error.hpp>

namespace moeplan::hostrt {
namespace {

// Keeps the optimiser from dropping a result nobody reads.
volatile float g_sink = 0;

Eigen::Index index(std::int64_t v) { return static_cast<Eigen::Index>(v); }

}  // namespace

HostGemm::HostGemm(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t count)
    : a_(Matrix::Random(index(m), index(k))), b_(Matrix::Random(index(k), index(n))), c_(index(m), index(n)),
      count_(count) {
  MOEPLAN_CHECK(m > 0 && k > 0 && n > 0 && count > 0, "a GEMM has positive dimensions");
}

void HostGemm::run() {
  for (std::int64_t i = 0; i < count_; ++i) {
    c_.noalias() = a_ * b_;
    g_sink = g_sink + c_(0, 0);
  }
}

HostAttention::HostAttention(std::int64_t queries, std::int64_t context, std::int64_t heads, std::int64_t head_dim)
    : queries_(queries), context_(context), heads_(heads) {
  MOEPLAN_CHECK(queries > 0 && context >= queries && heads > 0 && head_dim > 0, "an attention shape is positive");
  for (std::int64_t h = 0; h < std::min(heads, kDistinctHeads); ++h) {
    q_.push_back(Matrix::Random(index(queries), index(head_dim)));
    k_.push_back(Matrix::Random(index(context), index(head_dim)));
    v_.push_back(Matrix::Random(index(context), index(head_dim)));
  }
  scores_.resize(64, index(context));
  out_.resize(index(queries), index(head_dim));
}

void HostAttention::run() {
  const Eigen::Index l = index(queries_);
  const Eigen::Index before = index(context_ - queries_);  // earlier tokens every query sees
  const Eigen::Index block = kBlockRows;
  const float scale = 1.0f / std::sqrt(static_cast<float>(out_.cols()));
  for (std::int64_t head = 0; head < heads_; ++head) {
    const std::size_t h = static_cast<std::size_t>(head % kDistinctHeads);
    for (Eigen::Index b0 = 0; b0 < l; b0 += block) {
      const Eigen::Index rows = std::min(block, l - b0);
      const Eigen::Index keys = before + b0 + rows;
      auto sc = scores_.topLeftCorner(rows, keys);
      sc.noalias() = q_[h].middleRows(b0, rows) * k_[h].topRows(keys).transpose();
      for (Eigen::Index r = 0; r < rows; ++r) {
        auto row = sc.row(r);
        const Eigen::Index visible = before + b0 + r + 1;
        row.tail(keys - visible).setConstant(-std::numeric_limits<float>::infinity());
        row.head(visible) *= scale;
        const float top = row.head(visible).maxCoeff();
        row = (row.array() - top).exp();
        row /= row.sum();
      }
      out_.middleRows(b0, rows).noalias() = sc * v_[h].topRows(keys);
    }
    g_sink = g_sink + out_(0, 0);
  }
}

}  // namespace moeplan::hostrt
