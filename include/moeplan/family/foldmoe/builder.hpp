#pragma once
// FoldMoE (shared/papers/foldmoe.md): attention-MoE pipelining inside each
// Transformer-MoE block. Schedules:
//   none          no overlap (Megatron-MoE baseline)
//   tutel         attention whole; MoE in d token micro-batches, A2A and experts pipelined
//   aaam          attention in d token-uniform slices, all attention then all MoE
//   1a1m          interleaved: A0 A1 M0 A2 M1 ... (foldmoe.md Fig. 7)
//   1a1m-uniform  1A1M with the token buffer and Algorithm 1's time-uniform slices
// Backward runs the same pattern reversed in time with 2x compute; the
// gradient all-reduce over DP (and over EDP for experts) follows the backward pass.

#include <string>
#include <vector>

#include <moeplan/sched/schedule.hpp>

namespace moeplan::foldmoe {

/// The five FoldMoE schedule names, in CLI.md order.
const std::vector<std::string>& foldmoe_schedules();

/// Builds one training iteration (every micro-batch of one DP rank, forward and
/// backward, then gradient all-reduce) for one representative rank, or with
/// knobs.multi_rank for every rank of the cluster: each runs the same program on
/// its own compute, comm and intra streams; TP AllGather / ReduceScatter /
/// AllReduce over each tp group, ETP ones over each etp group, AlltoAll over
/// each EP group, gradient all-reduces over each DP and EDP group, each one task
/// held by its members; stragglers slow the ranks' compute.
/// Input errors: an unknown schedule, a degree outside 1..(tokens a rank holds
/// per sequence), multi_rank with pp or vpp above 1 (schedule.mode).
sched::BuiltSchedule build_foldmoe(const model::ScenarioSpec& scenario, const cost::CostModel& costs,
                            const sched::ScheduleKnobs& knobs);

}  // namespace moeplan::foldmoe
