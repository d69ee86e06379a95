#pragma once
// The host's issue time of an eager Megatron-Core MoE block (docs/cost-model.md,
// "Host time"). Megatron-Core issues every kernel from Python; the host
// normally runs ahead of the GPU and its time is hidden behind the queue. A
// dropless dispatcher needs the token counts on the host to size its buffers:
// it copies them and waits for the copy once per MoE block forward
// (Megatron-Core's token_dispatcher.py, cuda_sync_point; HybridEP's
// tokens_per_expert.sum(); DeepEP's host-side receive counts). From that wait
// the GPU has nothing queued, and until the next block's wait it runs only
// what the host has issued: the stretch between two waits lasts at least as
// long as the host takes to issue it. This file prices that floor; price_layers
// adds what it exceeds the GPU's own time by.

#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// Whether an MoE block's forward pass waits on the host for its token counts:
/// a dropless block, unless the whole iteration replays from one CUDA graph
/// (static shapes). A token-drop block (moe.capacity_factor) is padded to its
/// capacity, as moeplan prices it and --emit megatron writes it
/// (--moe-pad-expert-input-to-capacity): its shapes are static and it does not wait.
bool moe_dispatch_waits_on_host(const model::MoeSpec& moe, const model::CudaGraphs& graphs);

/// @brief The host's issue time of one MoE block's forward pass (ms), the
/// parts not replayed from CUDA graphs: the whole block, and the MoE layer alone
/// (router, dispatch, experts, combine), which selective recomputation of "moe" reruns.
struct BlockHostTimes {
  double block_ms = 0;
  double moe_layer_ms = 0;
};
BlockHostTimes moe_block_host_ms(const model::HostIssueModelSpec& host, const model::CudaGraphs& graphs,
                                 double local_experts);

/// What the GPU waits for the host in a stretch the host issues from empty:
/// max(0, host_ms - gpu_ms) (the stretch takes at least the host's time).
double host_wait_ms(double host_ms, double gpu_ms);

}  // namespace moeplan::cost
