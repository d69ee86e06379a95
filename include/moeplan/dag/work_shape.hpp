#pragma once
// What a compute task does, in the shapes its builder priced: the GEMMs and
// the causal attention core behind its FLOPs. A builder records them when
// asked (sched::ScheduleKnobs::record_work) so that the executor replays the
// task's own work (exec/replay_plan.hpp) instead of guessing it back from the
// task's FLOPs; the engine never reads them.

#include <compare>
#include <cstdint>
#include <optional>
#include <vector>

namespace moeplan::dag {

/// @brief `count` GEMMs C[m x n] = A[m x k] B[k x n], 2 m n k FLOPs each, one kernel each.
struct GemmBatch {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t count = 1;
  friend auto operator<=>(const GemmBatch&, const GemmBatch&) = default;
};

/// @brief A causal attention core: `queries` queries after `context - queries`
/// earlier tokens, over `heads` heads (every sequence's heads together) of
/// `head_dim` (cost/attention_shape.hpp).
struct AttentionCore {
  std::int64_t queries = 0;
  std::int64_t context = 0;
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
  friend auto operator<=>(const AttentionCore&, const AttentionCore&) = default;
};

/// @brief One compute task's work: its GEMMs, in order, then its attention core
/// when it has one (an attention task: the Q, K, V, O projections, then the core).
struct WorkShape {
  std::vector<GemmBatch> gemms;
  std::optional<AttentionCore> attention;
  friend auto operator<=>(const WorkShape&, const WorkShape&) = default;
};

/// 2 m n k x count.
double gemm_flops(const GemmBatch& gemm);

/// The least bytes a task's work moves to and from device memory: every
/// operand read once and every result written once (a GEMM: A, B read and C
/// written, `count` times; the attention core: Q, K and V read and O
/// written), at `operand_bytes` per input element and `result_bytes` per
/// output element. What a roofline divides FLOPs by (Chakra's `tensor_size`,
/// ASTRA-sim's operational intensity); a kernel that re-reads an operand
/// moves more.
double work_bytes(const WorkShape& work, double operand_bytes, double result_bytes);

}  // namespace moeplan::dag
