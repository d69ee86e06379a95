#pragma once
// The host's compute kernels, shared by `calibrate --backend host` (which
// times them) and the host executor (which replays a plan with them): the same
// code measured and replayed, so that a replay's error is the model's, not a
// difference between two kernels.

#include <cstdint>
#include <vector>

#include <Eigen/Dense>

namespace moeplan::hostrt {

/// @brief Operands of `count` float32 GEMMs [m x k] x [k x n], allocated once, run many times.
class HostGemm {
 public:
  HostGemm(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t count = 1);
  /// The `count` products, one after the other.
  void run();

 private:
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Matrix a_, b_, c_;
  std::int64_t count_;
};

/// @brief A causal self-attention core on `heads` heads of `head_dim`:
/// `queries` queries at the end of a `context`-token sequence, each seeing
/// every key up to its own position. Per head, in query blocks of 64 (as
/// FlashAttention tiles it): scores Q K^T over the keys up to the block's last
/// query, the masked part set to -inf, row softmax, times V.
class HostAttention {
 public:
  /// Query rows per block (the tile of the cost model's attention shape model).
  static constexpr std::int64_t kBlockRows = 64;

  HostAttention(std::int64_t queries, std::int64_t context, std::int64_t heads, std::int64_t head_dim);
  void run();

 private:
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::int64_t queries_, context_, heads_;
  // At most kDistinctHeads operand sets, cycled over the heads: the work per
  // head is the same, and a replay task carrying hundreds of heads does not
  // need hundreds of copies (the calibration grid's 4 heads are all distinct).
  static constexpr std::int64_t kDistinctHeads = 8;
  std::vector<Matrix> q_, k_, v_;
  Matrix scores_, out_;
};

}  // namespace moeplan::hostrt
