#pragma once
// FlowMoE (shared/papers/flowmoe.md): L Transformer-MoE blocks under expert
// parallelism, the batch cut into R micro-batches. Tasks per block: AT_r (MHA
// + gating), D_r, E_r, C_r, and the all-reduce AR of the MHA + gate gradients
// (4M^2 + ME parameters) over DP. Orders follow Eqs. 2-5; every rank's
// communication goes through one pool where AlltoAll always outranks
// all-reduce chunks and nothing is preempted (Algorithm 2). FlowMoE's experts
// have one copy each; where they have replicas (edp > 1) their gradients are
// all-reduced over EDP, as all-reduces of their own that are chunked, pooled
// and placed like AR (the paper leaves them out).
//   none        R = 1, AR after the backward pass
//   tutel       MoE layer pipelined (R), MHA + gating whole, AR after the backward pass
//   flowmoe-at  MHA + gating pipelined too, AR after the backward pass
//   flowmoe-ar  MoE-only pipelining, AR in chunks of Sp bytes in the pool
//   flowmoe     both

#include <optional>
#include <string>
#include <vector>

#include <moeplan/sched/schedule.hpp>

namespace moeplan::flowmoe {

const std::vector<std::string>& flowmoe_schedules();

/// @brief Knobs of a FlowMoE-family schedule.
struct FlowMoeKnobs {
  std::string schedule = "flowmoe";
  std::int64_t degree = 2;                ///< R (FlowMoE's default 2)
  std::int64_t ar_chunk_bytes = 4 << 20;  ///< Sp, for flowmoe-ar and flowmoe
  bool multi_rank = false;                ///< every rank, collectives over groups
  bool record_work = false;               ///< sched::ScheduleKnobs::record_work
};

/// AlltoAll tasks outrank all-reduce chunks in the pool.
inline constexpr std::int32_t kA2APriority = 1;
inline constexpr std::int32_t kAllReducePriority = 0;

sched::BuiltSchedule build_flowmoe(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                            const FlowMoeKnobs& knobs);

/// The largest per-block all-reduce tensor (bytes): the MHA + gate gradients
/// over DP or, where experts have replicas (edp > 1), the expert gradients over
/// EDP, whichever is larger; the top of Sp's search space.
double flowmoe_block_allreduce_bytes(const model::ScenarioSpec& scenario);

}  // namespace moeplan::flowmoe
