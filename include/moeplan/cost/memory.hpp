#pragma once
// Bytes one GPU holds for a mapping (docs/cost-model.md, "Memory"): weights,
// gradients, the distributed optimizer's shard and activations. The same
// model for every family: a plan of any family is checked against the GPU's
// memory with it.

#include <string>

#include <moeplan/cost/mapping.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief Memory assumptions (docs/cost-model.md, "Memory"); recomputation comes from the scenario.
struct MemoryModel {
  /// What PyTorch's caching allocator reserves beyond the tensors' peak, as a
  /// share of that peak: the median of SimuMax's 43 measured B200 runs
  /// (max_reserved over max_allocated, 2.8% to 9.3%, median 4.0%; MooreThreads/
  /// SimuMax docs/b200/b200_release_v1.2_summary.json).
  double allocator_overhead = 0.040;
  /// The CUDA context PyTorch creates under lazy module loading (CUDA 12.2 on
  /// and PyTorch's default since 1.13): 287,047,680 B measured in
  /// pytorch/pytorch#86509 (666,632,192 B eager).
  double context_bytes = 287047680.0;
  /// This model's largest under-prediction of a published peak allocation, as
  /// a share of that peak: every one of the 43 published peaks is
  /// under-predicted, by up to 6.57% (S1-43; docs/validation.md, and the
  /// cli-bench test holds it). A mapping whose bytes / (1 - this) exceed the
  /// usable memory is tight.
  double largest_underprediction = 0.066;
};

/// The bytes of tensors a GPU holds at most: its memory less the CUDA context,
/// over the allocator's overhead. NCCL's communicator buffers (allocated
/// outside PyTorch's allocator) are not counted: no published figure per
/// communicator was found (docs/cost-model.md, "Memory").
double usable_memory_bytes(const model::GpuSpec& gpu, const MemoryModel& memory = {});

/// @brief Parameters one GPU of the largest pipeline stage holds, by the group that reduces their gradients.
struct HeldParams {
  double dense = 0;   ///< attention, norms, router, shared experts, embeddings: over dp x cp
  double expert = 0;  ///< routed experts: over edp
  /// Of both, the weights of linear layers (attention projections, dense and
  /// expert FFNs, shared experts): the GEMMs an FP8 recipe runs in FP8.
  double linear = 0;
};

/// Parameters one GPU holds: its layers, plus the embedding (first stage) or LM
/// head and final norm (last stage), both when pp = 1.
HeldParams held_params(const model::ModelSpec& model, const MappingConfig& c);

/// The part of held_params that the stage's layers hold (no embedding, LM head or final norm).
HeldParams held_params_of_layers(const model::ModelSpec& model, const MappingConfig& c);

/// The ends' part of one stage (the word embedding; the LM head and final
/// norm), for the stage whose ends hold the most (none with no ends: 0).
HeldParams held_params_of_ends(const model::ModelSpec& model, const MappingConfig& c);

/// What one GPU holds of one transformer block (an MoE block, or a dense one
/// when `moe` is false): what Megatron-FSDP gathers and reduce-scatters per
/// block. Zero for a kind of block the model does not have.
HeldParams block_params(const model::ModelSpec& model, const MappingConfig& c, bool moe);

/// held_params(model, c).dense + .expert.
double params_per_gpu(const model::ModelSpec& model, const MappingConfig& c);

/// @brief What a scenario's schedule and parallelism add to the memory a mapping needs.
struct MemorySettings {
  /// Megatron-Core's recomputation (granularity, modules, method and layers:
  /// docs/cost-model.md, "Recomputation").
  model::RecomputeSpec recompute;
  /// The attention kernel: "flash" (no score matrix stored) or "unfused"
  /// (stored unless the core is recomputed).
  std::string attention_backend = "flash";
  /// Megatron-FSDP's optim_grads_params: the blocks' weights and gradients
  /// sharded with their optimizer state, plus the working set of the blocks
  /// being gathered (docs/cost-model.md, "FSDP").
  bool fully_sharded = false;
  double main_grad_bytes = 4.0;  ///< each gradient as reduced (model::main_grad_bytes: 4, or 2 in bf16)
  double kept_grad_bytes = 4.0;  ///< each gradient as kept for the step (model::kept_grad_bytes)
  /// Sharded per parameter (model::optimizer_state_bytes: 12, 10, 6, 8 or 4).
  double optimizer_state_bytes = 12.0;
  /// The loss on Transformer Engine's fused kernels, which keep no fp32 copy of
  /// the logits (model::ScheduleSpec::cross_entropy_fusion).
  bool fused_cross_entropy = false;
  /// The CP exchange (parallelism.cp_comm_type): under "a2a" and "a2a+p2p"
  /// Transformer Engine keeps the attention output a second time, in its
  /// heads-split layout (docs/cost-model.md, "Memory").
  std::string cp_comm_type = "p2p";
  /// Transformer Engine's fused grouped MLP (model::ScheduleSpec::fused_grouped_mlp):
  /// its kernel clamps a clamped GLU's inputs in place, no torch clamp keeps them.
  bool fused_grouped_mlp = false;
  /// The scenario's own (schedule and parallelism).
  static MemorySettings of(const model::ScenarioSpec& scenario);
};

/// Bytes one GPU of the first pipeline stage holds for mapping c with the
/// workload's batch and sequence and `settings`. Under an FP8 recipe
/// (workload.precision) the linear layers' inputs are saved in FP8 and their
/// weights' FP8 copies are kept (docs/cost-model.md, "FP8").
double memory_per_gpu(const model::ModelSpec& model, const model::WorkloadSpec& workload,
                      const MemorySettings& settings, const MappingConfig& c);

/// Transformer Engine's cached dummy weight gradients on one GPU of a stage
/// whose blocks are MoE (`moe_blocks`) and/or dense (`dense_blocks`): one
/// weight-sized tensor at the model's dtype_bytes per distinct shape among its
/// TE linear layers (attention's, a dense block's MLP, one routed expert's,
/// the shared experts'), kept from the first backward pass on (TE >= 2.3,
/// module/base.py get_dummy_wgrad; docs/cost-model.md, "Memory").
double dummy_wgrad_bytes(const model::ModelSpec& model, const MappingConfig& c, bool moe_blocks, bool dense_blocks);

/// Whether `bytes` of tensors fit in the GPU (usable_memory_bytes).
bool fits_in_memory(const model::GpuSpec& gpu, double bytes, const MemoryModel& memory = {});

/// Whether `bytes` fit, but by less than the model's largest under-prediction
/// of a measured peak (MemoryModel::largest_underprediction): the run may not fit.
bool tight_in_memory(const model::GpuSpec& gpu, double bytes, const MemoryModel& memory = {});

/// A plan explanation's clause for a tight mapping ("; its 74.8 GiB per GPU is
/// within 6.6% of the 76.7 GiB usable, ...: it may not fit"), empty otherwise.
std::string tight_memory_clause(const model::GpuSpec& gpu, double bytes, const MemoryModel& memory = {});

}  // namespace moeplan::cost
