#pragma once
// A cost profile derived from a cluster's datasheet numbers when nothing was
// measured: peak FLOP/s and link bandwidth, each times a stated efficiency,
// and startup latencies typical of CUDA kernels and NCCL. Provenance DATASHEET.

#include <optional>
#include <string>

#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

enum class ComputeDtype { Half, Fp32 };

/// The host-issue model's parts (ms of host time per MoE block forward;
/// docs/cost-model.md, "Host time"): fitted by scripts/fit_host_issue.py to
/// the 59 published MoE runs whose blocks wait on the host (S5 56, S9 1, S12 2
/// of tests/data/published-runs.tsv), rounded to 1 us; docs/validation.md
/// gives the in-sample and leave-one-source-out errors.
inline constexpr double kHostAttentionMs = 0.773;
inline constexpr double kHostRouterMs = 1.000;
inline constexpr double kHostMoeMs = 1.609;
inline constexpr double kHostLocalExpertMs = 0.213;
inline constexpr const char* kHostIssueSource =
    "Megatron-Core's eager host time per MoE block forward, fitted to 59 published runs whose blocks wait on the "
    "host (scripts/fit_host_issue.py; docs/validation.md)";

/// @brief The assumptions a datasheet profile is built on (docs/cost-model.md gives the sources).
struct DatasheetAssumptions {
  ComputeDtype dtype = ComputeDtype::Half;
  double gemm_efficiency = 0.6;       ///< share of dense peak reached by cuBLAS training GEMMs
  double attention_efficiency = 0.4;  ///< share of dense peak reached by attention kernels (causal FLOPs)
  double link_efficiency = 0.8;       ///< NCCL bus bandwidth / line rate
  /// Share of HBM bandwidth a memory-bound kernel (FP8 casts) reaches: SimuMax's
  /// measured B200 system file (MooreThreads/SimuMax configs/system/, permutation
  /// kernels at ~0.5 of HBM bandwidth).
  double elementwise_efficiency = 0.5;
  double compute_alpha_ms = 0.01;     ///< kernel launch and tail, ~10 us
  double attention_alpha_ms = 0.01;   ///< the attention line's startup
  /// Half precision: Transformer Engine's fused attention (cuDNN / FlashAttention)
  /// on the tensor cores, the line fitted to SimuMax's B200 FlashAttention
  /// sweep (docs/cost-model.md, "Datasheet assumptions"); for_gpu puts them in
  /// attention_efficiency and attention_alpha_ms.
  double fused_attention_efficiency = 0.39;
  double fused_attention_alpha_ms = 0.05;
  /// Each expert's GEMM in a grouped GEMM (gemm_shape.product_alpha_ms, half
  /// precision): fitted to SimuMax's B200 grouped-GEMM sweep (docs/cost-model.md).
  double grouped_product_alpha_ms = 0.005;
  /// Megatron-Core's host time to issue one MoE block's forward pass eagerly
  /// (docs/cost-model.md, "Host time"), by part: fitted to published runs
  /// (scripts/fit_host_issue.py, which names its rows and gives the
  /// leave-one-source-out error; docs/validation.md). Half precision only
  /// (the GPUs' Megatron-Core runs): for_gpu clears it for fp32 profiles.
  std::optional<model::HostIssueModelSpec> host_issue = model::HostIssueModelSpec{
      kHostAttentionMs, kHostRouterMs, kHostMoeMs, kHostLocalExpertMs, kHostIssueSource};
  double intra_alpha_ms = 0.015;      ///< NCCL small-message latency inside a node
  double inter_alpha_ms = 0.03;       ///< NCCL small-message latency across nodes
};

/// The assumptions for this GPU: its own measured or published gemm_efficiency
/// (cluster file) in place of the generic one, for half-precision tensor GEMMs.
/// Half precision also takes the fused-attention line; fp32 (CUDA-core)
/// profiles model the papers' own kernels, not Transformer Engine's: the
/// generic attention line and no per-expert launch in grouped GEMMs.
DatasheetAssumptions for_gpu(const model::GpuSpec& gpu, DatasheetAssumptions assumptions);

/// The GEMM shape model of a GPU from its datasheet: units = SMs, the peak of
/// the chosen dtype, memory bandwidth, the cluster file's tile (else CUTLASS's
/// default 128 x 256), the gemm line's efficiency and startup. Empty when the
/// cluster file gives no sm_count or memory_gbytes_per_s.
std::optional<model::GemmShapeModelSpec> datasheet_gemm_shape(const model::GpuSpec& gpu,
                                                              const DatasheetAssumptions& assumptions);

/// Lines for gemm and attention (LOCAL); with half precision, gemm_fp8 (the
/// FP8 peak x the gemm efficiency) where the GPU has an FP8 peak; elementwise
/// (memory bandwidth x elementwise_efficiency, per byte) where it has a memory
/// bandwidth; every collective on INTRA at group
/// link_domain() (the NVLink domain, else the node; when > 1) and on INTER at
/// the whole cluster (when it spans more than one domain), and p2p on both
/// links at group 2.
model::CostProfileSpec datasheet_profile(const model::ClusterSpec& cluster, const std::string& name,
                                         const DatasheetAssumptions& assumptions);

}  // namespace moeplan::cost
