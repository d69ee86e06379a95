#pragma once
// Validated, plain-C++ descriptions of what the user asked for: the model, the
// cluster, the parallel mapping, the workload and the cost profile. These are
// what every later stage (cost model, schedules, planners) reads; the Protobuf
// text files are converted into them at the edge (src/io).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/core/error.hpp>

namespace moeplan::model {

enum class FfnType { GeluFfn, SwiGlu };
enum class NormType { LayerNorm, RmsNorm };

/// @brief The mixture-of-experts part of a model.
struct MoeSpec {
  std::int64_t num_experts = 0;
  std::int64_t top_k = 0;
  /// Tokens per expert = capacity_factor * tokens * top_k / num_experts; empty = dropless.
  std::optional<double> capacity_factor;
  FfnType expert_type = FfnType::GeluFfn;
  std::int64_t expert_ffn_hidden = 0;
  std::int64_t num_shared_experts = 0;
  std::int64_t shared_expert_ffn_hidden = 0;
  std::int64_t first_k_dense = 0;  ///< the first blocks that are dense (DeepSeek's first_k_dense_replace); in moe_layer too
  bool shared_expert_gate = false;  ///< Qwen2-MoE: a d_model x 1 sigmoid gate on the shared experts' output
  /// Routing metadata from a Hugging Face config (DeepSeek), checked and
  /// carried: the cost model routes over all experts. The groups (group-limited
  /// routing: each token's experts in topk_groups of num_expert_groups) bound
  /// the nodes DeepEP's dispatch reaches (cost/deepep.hpp); nothing else reads them.
  std::optional<double> routed_scaling_factor;
  std::optional<std::int64_t> num_expert_groups;
  std::optional<std::int64_t> topk_groups;
  std::string scoring_func;  ///< "softmax", "sigmoid" or empty (not given)
  /// GPT-OSS's clamp of the routed experts' GLU inputs (swiglu_limit); 0: none.
  double glu_clamp = 0;
};

/// @brief Multi-head latent attention (DeepSeek-V2/V3): Q and K/V through low-rank latents.
struct MlaSpec {
  std::optional<std::int64_t> q_lora_rank;  ///< empty: Q projected at full rank
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;  ///< the rope part of the key is one per token, shared by the heads
  std::int64_t v_head_dim = 0;
};

/// @brief A Transformer model, MoE or dense: its shape and element size.
struct ModelSpec {
  std::string name;
  std::int64_t num_layers = 0;
  std::int64_t d_model = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;  ///< of queries and keys (with MLA: qk_nope_head_dim + qk_rope_head_dim)
  std::int64_t ffn_hidden = 0;  ///< dense FFN of non-MoE blocks (0 if every block is MoE)
  FfnType ffn_type = FfnType::GeluFfn;
  std::int64_t vocab_size = 0;
  bool tie_embeddings = false;
  std::int64_t max_position_embeddings = 0;  ///< learned positions; 0 = rotary / none
  NormType norm_type = NormType::LayerNorm;
  bool linear_bias = false;
  bool qkv_bias = false;
  std::int64_t dtype_bytes = 2;
  MoeSpec moe;
  std::optional<MlaSpec> mla;  ///< multi-head latent attention; empty: Q, K, V, O of head_dim per head
  /// Sliding-window attention: tokens a query sees (itself included) in the
  /// blocks where window_layer is true; 0: none (every block causal over all).
  std::int64_t sliding_window = 0;
  std::vector<bool> window_layer;  ///< per block; empty without a window
  bool attention_sinks = false;    ///< a learned sink logit per head per block (parameters only)
  /// Blocks with the sliding window.
  std::int64_t num_window_layers() const;
  /// Chunked attention (Llama 4): the sequence is cut into chunks of this many
  /// tokens and a query attends causally within its own chunk only, in the
  /// blocks where chunk_layer is true; 0: none. Never on a windowed block.
  std::int64_t attention_chunk_size = 0;
  std::vector<bool> chunk_layer;  ///< per block; empty without chunks
  /// Blocks with chunked attention.
  std::int64_t num_chunk_layers() const;
  /// One flag per block, true where the FFN is an MoE layer.
  std::vector<bool> moe_layer;
  /// Multi-token prediction modules (DeepSeek-V3), after the last block, on
  /// the last pipeline stage; the embedding and LM head are the model's.
  std::int64_t mtp_num_layers = 0;

  std::int64_t num_moe_layers() const;
  /// A dense model (no `moe` in its file): no experts, every block's FFN is ffn_hidden wide.
  bool is_dense() const { return moe.num_experts == 0; }
  /// Elements of one head's value (and of the attention output per head): v_head_dim with MLA, else head_dim.
  std::int64_t value_head_dim() const { return mla ? mla->v_head_dim : head_dim; }
};

/// The pass an attention line prices (docs/cost-model.md, "Fused attention").
enum class AttentionPass { Forward, Backward };

/// @brief A fused causal attention kernel's rate on a GPU, measured or
/// published: t = alpha + FLOPs / (efficiency x dense half-precision peak).
struct FusedAttentionRate {
  AttentionPass pass = AttentionPass::Forward;
  std::optional<std::int64_t> head_dim;  ///< query/key head dimension; empty: any without its own entry
  double efficiency = 0;                 ///< share of the dense half-precision peak, in (0, 1]
  double alpha_ms = 0;                   ///< startup
};

/// @brief One GPU model, from its datasheet.
struct GpuSpec {
  std::string name;
  double peak_flops_per_s_fp32 = 0;
  double peak_flops_per_s_fp16 = 0;
  double peak_flops_per_s_bf16 = 0;
  double memory_bytes = 0;
  /// For datasheet-profile's GEMM shape model; empty: the profile gets none.
  std::optional<std::int64_t> sm_count = std::nullopt;
  std::optional<double> memory_bytes_per_s = std::nullopt;
  std::optional<std::int64_t> gemm_tile_m = std::nullopt;  ///< empty: CUTLASS's default 128 x 256 tensor-core tile
  std::optional<std::int64_t> gemm_tile_n = std::nullopt;
  double peak_flops_per_s_fp8 = 0;  ///< dense FP8 tensor peak; 0: no FP8 tensor cores
  bool mx_formats = false;          ///< MX block scaling in the tensor cores (Blackwell)
  /// Share of the half-precision (and FP8) tensor peak the GPU's training
  /// GEMMs reach, measured or published; absent: datasheet-profile's generic assumption.
  std::optional<double> gemm_efficiency;
  /// Fused attention kernels per pass and head dimension (datasheet-profile
  /// writes an ATTENTION line for each); empty: the generic attention line only.
  std::vector<FusedAttentionRate> fused_attention;
  /// Share of memory_bytes_per_s Transformer Engine's fused cross-entropy
  /// kernels reach on moeplan's byte count (datasheet-profile writes an
  /// ELEMENTWISE line for kernel kFusedCrossEntropyKernel); empty: the generic line.
  std::optional<double> fused_cross_entropy_efficiency;
  /// Share of memory_bytes_per_s that streaming passes over a flat buffer
  /// reach (datasheet-profile writes an ELEMENTWISE line for kernel
  /// kGradientBufferKernel); empty: the generic line.
  std::optional<double> gradient_buffer_efficiency;
};

/// @brief A link class: per-direction bandwidth of one port and ports per node.
struct LinkSpec {
  std::string name;
  double bandwidth_bytes_per_s = 0;
  std::int64_t ports_per_node = 1;
};

/// @brief What NCCL reaches on a cluster's intra link, measured or published
/// (cost::datasheet_profile's intra lines use it instead of the generic figures).
struct IntraCollectivesSpec {
  std::optional<double> efficiency;  ///< nccl-tests' bus bandwidth / line rate (absent: generic)
  std::optional<double> fixed_ms;    ///< a collective's startup: fixed + step x (ranks - 1) (absent: generic)
  double step_ms = 0;                ///< per ring step
};

/// @brief A homogeneous GPU cluster: nodes of identical GPUs, one intra and one inter link.
struct ClusterSpec {
  std::string name;
  std::int64_t num_nodes = 0;
  std::int64_t gpus_per_node = 0;
  GpuSpec gpu;
  LinkSpec intra_link;
  LinkSpec inter_link;
  /// GPUs joined by one NVLink fabric, a multiple of gpus_per_node; 0: the node.
  std::int64_t nvlink_domain_gpus = 0;
  std::optional<IntraCollectivesSpec> intra_collectives;

  std::int64_t world_size() const { return num_nodes * gpus_per_node; }
  /// The GPUs that reach each other over intra_link: consecutive ranks, the
  /// NVLink domain (GB200 NVL72: 72), else the node.
  std::int64_t link_domain() const { return nvlink_domain_gpus > 0 ? nvlink_domain_gpus : gpus_per_node; }
  /// The inter-link ports of one link domain: its nodes' ports together.
  std::int64_t link_domain_ports() const { return inter_link.ports_per_node * (link_domain() / gpus_per_node); }
};

/// @brief Attention (tp, cp, dp, pp) and expert (etp, ep, edp, pp) mappings.
struct ParallelSpec {
  std::int64_t tp = 1;
  std::int64_t cp = 1;
  std::int64_t dp = 1;
  std::int64_t pp = 1;
  std::int64_t ep = 1;
  std::int64_t etp = 1;
  std::int64_t edp = 1;
  std::int64_t vpp = 1;
  bool sequence_parallel = false;
  std::string order = "tp-cp-ep-dp-pp";
  /// Transformer blocks of each virtual stage in model order (pp x vpp of
  /// them), from parallelism.pipeline_layout; empty: the even split.
  std::vector<std::int64_t> stage_layers;
  /// The layout's 'm' symbols: multi-token-prediction blocks on its last
  /// stage; 0, or model.mtp_num_layers (Megatron's rule), which moeplan
  /// places on the last stage either way.
  std::int64_t layout_mtp_blocks = 0;
  /// Megatron-Core's --cp-comm-type: p2p (default), a2a, allgather, a2a+p2p
  /// (cost/context_parallel.hpp), and for a2a+p2p its
  /// --hierarchical-context-parallel-sizes: {a2a size, ring size}, product cp.
  std::string cp_comm_type = "p2p";
  std::vector<std::int64_t> hierarchical_cp_sizes;
};

/// How the router spreads token slots over experts (docs/cost-model.md, "Uneven expert load").
enum class Routing { Balanced, Zipf, Histogram };

/// Plausibility bound of workload.routing_zipf_s: at s = 4 the hottest expert
/// already takes 1 / zeta(4) = 92% of the slots (zeta(4) = pi^4 / 90 = 1.0823),
/// a collapsed router rather than a skewed one; measured expert-popularity
/// skews are fitted with s near 1 (docs/cost-model.md).
inline constexpr double kMaxRoutingZipfS = 4.0;

/// @brief Batch and sequence sizes of one training iteration.
/// @brief The GEMMs' number format: the model's dtype, or a Transformer
/// Engine FP8 recipe (Megatron's --fp8-recipe; docs/cost-model.md, "FP8").
enum class Precision { Bf16, Fp8Delayed, Fp8Tensorwise, Fp8Blockwise, Mxfp8 };
const char* to_string(Precision precision);
std::optional<Precision> precision_from_string(const std::string& text);
inline bool is_fp8(Precision p) { return p != Precision::Bf16; }

struct WorkloadSpec {
  std::int64_t micro_batch_size = 1;   ///< sequences per micro-batch per DP rank
  std::int64_t global_batch_size = 1;  ///< sequences per iteration, all DP ranks
  std::int64_t seq_len = 0;            ///< tokens per sequence
  Routing routing = Routing::Balanced;
  std::optional<double> routing_zipf_s;   ///< Zipf exponent s (routing = zipf)
  std::string routing_histogram_ref;      ///< as written (routing = histogram)
  std::string routing_histogram_file;     ///< the file it resolved to, read by the loader
  std::vector<double> routing_histogram;  ///< tokens per expert id, from that file
  std::int64_t routing_seed = 1;          ///< seeds the sampler (zipf, histogram)
  Precision precision = Precision::Bf16;  ///< the GEMMs' number format

  /// Micro-batches each DP rank runs per iteration.
  std::int64_t micro_batches_per_rank(std::int64_t dp) const { return global_batch_size / (micro_batch_size * dp); }
};

enum class OpClass { Gemm, Attention, A2A, AllGather, ReduceScatter, AllReduce, P2P, GemmFp8, Elementwise };
/// Ops one GPU runs alone (gemm, attention, gemm_fp8, elementwise): LOCAL lines, no group.
bool is_compute_op(OpClass op);
inline constexpr int kOpClassCount = 9;
enum class LinkClass { Local, Intra, Inter };
enum class Provenance { Measured, Paper, Datasheet };

/// @brief One fitted line t = alpha + n * beta for (op, link, group size).
struct LinearCostSpec {
  OpClass op = OpClass::Gemm;
  LinkClass link = LinkClass::Local;
  std::int64_t group = 1;
  double alpha_ms = 0;
  double beta_ms_per_unit = 0;  ///< per FLOP (gemm, attention) or per byte (communication)
  double r2 = 1;
  std::int64_t points = 0;
  Provenance provenance = Provenance::Measured;
  std::string source;
  /// Members of the measured group on one node; empty = consecutive ranks
  /// filling nodes, min(group, gpus_per_node) (nccl-tests' default placement).
  std::optional<std::int64_t> ranks_per_node;
  /// Communicators that crossed the same nodes at once while it was measured
  /// (1 for one nccl-tests run; docs/cost-model.md "Shared NICs").
  std::int64_t concurrent_groups = 1;
  /// ATTENTION lines only: the pass the line prices (empty: both) and the
  /// query/key head dimension it was measured at (empty: any).
  std::optional<AttentionPass> attention_pass;
  std::optional<std::int64_t> head_dim;
  /// ELEMENTWISE lines only: the one kernel the line prices (kFusedCrossEntropyKernel, kGradientBufferKernel);
  /// empty: every memory-bound kernel without a line of its own.
  std::optional<std::string> kernel;
};

/// The kernel name of an ELEMENTWISE line that prices Transformer Engine's fused cross-entropy.
inline constexpr const char* kFusedCrossEntropyKernel = "fused_cross_entropy";
/// The kernel name of an ELEMENTWISE line that prices Megatron-Core DDP's
/// streaming passes over the gradient buffers (zero, NaN-check norm, pre-scaling).
inline constexpr const char* kGradientBufferKernel = "gradient_buffer";
/// Every kernel an ELEMENTWISE line may name.
inline constexpr const char* kElementwiseKernels[] = {kFusedCrossEntropyKernel, kGradientBufferKernel};

/// @brief One timed run of an operation, as a microbenchmark measured it.
struct TimingSample {
  OpClass op = OpClass::Gemm;
  LinkClass link = LinkClass::Local;
  std::int64_t group = 1;
  double size = 0;  ///< FLOPs (gemm, attention) or bytes (nccl-tests "size")
  double time_ms = 0;
  std::optional<std::int64_t> ranks_per_node;  ///< when the input tells (nccl-tests host names)
  SourceLocation where;  ///< file and line it was read from
};

/// Plausibility bounds of one timing sample (issue 13), checked by the readers
/// and by cost::fit_line. A size of 1e18 is an exabyte message, or a kernel of
/// 1e18 FLOP that runs 17 minutes at the H100's 989.5 TFLOP/s; the bundled
/// nccl-tests logs stop at 256 MiB. A timing of one operation that lasts an
/// hour (3.6e6 ms) is not a microbenchmark; the longest bundled sample (tests/data/calibration/) is 6.4 ms.
/// Both keep squares and sums of the least-squares fit far from overflow.
inline constexpr double kMaxSampleSize = 1e18;
inline constexpr double kMaxSampleTimeMs = 3.6e6;

/// @brief A GEMM's time from its shape (docs/cost-model.md, "GEMM shape
/// model"): a roofline whose compute side counts whole waves of output tiles
/// over the GPU's parallel units. Units are in the field names.
struct GemmShapeModelSpec {
  std::int64_t units = 1;                 ///< parallel units one wave fills (SMs; 1 core on the host)
  std::int64_t tile_m = 128;              ///< output tile rows
  std::int64_t tile_n = 128;              ///< output tile columns
  double peak_flops_per_s = 0;            ///< whole device, at the datatype priced
  double memory_bytes_per_s = 0;          ///< device memory bandwidth
  double efficiency = 1;                  ///< share of the per-unit peak a full tile reaches
  double alpha_ms = 0;                    ///< launch and tail, once per GEMM kernel
  Provenance provenance = Provenance::Datasheet;
  std::string source;                     ///< where the numbers come from
  std::optional<double> r2;               ///< of a fit to measured points
  std::int64_t points = 0;                ///< measured points fitted (0: not fitted)
  double peak_flops_per_s_fp8 = 0;        ///< GEMMs with FP8 operands; 0: the model prices none
  /// Each product of a grouped GEMM (batch > 1) adds this: Transformer
  /// Engine's grouped GEMM launches one cuBLAS GEMM per expert (0: one launch
  /// for the whole batch, as a strided-batched GEMM).
  double product_alpha_ms = 0;
};

/// @brief An attention task's time from its shape (docs/cost-model.md,
/// "Attention shape model"): projections as GEMMs, the causal core tile by tile.
struct AttentionShapeModelSpec {
  std::int64_t block_rows = 64;       ///< query rows the kernel takes at a time (its tile)
  double alpha_ms = 0;                ///< startup, once per attention task
  double matmul_ms_per_gflop = 0;     ///< Q K^T and P V over the tiles computed, per 1e9 FLOPs
  double score_ms_per_melement = 0;   ///< mask, scale and softmax, per 1e6 scores of the tiles
  Provenance provenance = Provenance::Measured;
  std::string source;                 ///< where the numbers come from
  std::optional<double> r2;           ///< of a fit to measured points
  std::int64_t points = 0;            ///< measured points fitted (0: not fitted)
};

/// @brief The host's time to issue one MoE block's forward pass when
/// Megatron-Core runs eagerly (docs/cost-model.md, "Host time"), by part of the
/// block: what the GPU waits for once a dropless dispatcher has synchronized
/// the host with it.
struct HostIssueModelSpec {
  double attention_ms = 0;     ///< the attention part: norms, QKV, core, projection, residual
  double router_ms = 0;        ///< the router and the dispatcher's preprocessing
  double moe_ms = 0;           ///< permutation, dispatch, combine and unpermutation, outside the experts
  double local_expert_ms = 0;  ///< each expert of the rank (its GEMMs and their operands)
  std::string source;          ///< where the numbers come from (a fit: its rows)
};

/// @brief The calibration data of one cluster.
struct CostProfileSpec {
  std::string name;
  std::string cluster;
  std::vector<LinearCostSpec> costs;
  double overlap_compute_slowdown = 1.0;
  double overlap_comm_slowdown = 1.0;  ///< communication slow-down beside compute (engine, docs/cost-model.md)
  /// When present, GEMMs of known shape are priced by it instead of the gemm
  /// line; absent, every GEMM is priced by the line (results as before).
  std::optional<GemmShapeModelSpec> gemm_shape = std::nullopt;
  /// When present, attention tasks are priced by it (projections by GEMM shape,
  /// core by tiles) instead of the attention line; absent, results as before.
  std::optional<AttentionShapeModelSpec> attention_shape = std::nullopt;
  /// When present, the host's issue time of an eager MoE block is priced where
  /// a dispatcher synchronizes with the host; absent, host time is not priced.
  std::optional<HostIssueModelSpec> host_issue = std::nullopt;
};

/// @brief Megatron-Core's activation recomputation (--recompute-granularity,
/// --recompute-modules, --recompute-method, --recompute-num-layers;
/// model/recompute.hpp checks it against a model, docs/cost-model.md
/// "Recomputation" prices it).
struct RecomputeSpec {
  std::string granularity = "none";  ///< none (default, as Megatron-Core), selective or full
  /// Selective: the submodules recomputed (core_attn, layernorm, moe_act,
  /// mla_up_proj, mlp, moe, shared_experts); empty: core_attn, Megatron's default.
  std::vector<std::string> modules;
  std::string method = "uniform";  ///< full: uniform (groups of num_layers) or block (the first num_layers)
  std::int64_t num_layers = 1;     ///< full: the group size (uniform) or the blocks recomputed per stage (block)
  bool operator==(const RecomputeSpec&) const = default;
};

/// @brief Megatron-Core's CUDA graphs (--cuda-graph-impl, --cuda-graph-modules;
/// docs/cost-model.md, "Host time"): the parts of each block replayed from a
/// graph, whose kernels the host does not issue one by one, or the whole
/// iteration in one graph (full_iteration: static shapes, no host synchronization).
struct CudaGraphs {
  bool full_iteration = false;
  bool attn = false;            ///< the attention part
  bool moe_router = false;      ///< the router
  bool moe_preprocess = false;  ///< the dispatcher's preprocessing (needs moe_router)
  bool any() const { return full_iteration || attn || moe_router || moe_preprocess; }
  bool operator==(const CudaGraphs&) const = default;
};
/// @brief Schedule knobs given by the user; unset ones are left to the planner.
struct ScheduleSpec {
  std::string name = "none";
  std::string family = "foldmoe";  ///< whose schedules apply: foldmoe, fsmoe, flowmoe
  std::optional<std::int64_t> degree;
  std::optional<std::int64_t> degree_forward;
  std::optional<std::int64_t> degree_backward;
  std::vector<std::int64_t> slicing_tokens;
  std::optional<std::int64_t> ar_chunk_bytes;
  bool fsmoe_released_solver_rules = false;
  bool multi_rank = false;
  std::optional<double> slow_ranks_compute_factor;  ///< FlowMoE K.1 heterogeneity
  double slow_ranks_fraction = 0.5;
  /// Noise (issue 15 item 5): every compute task's work times a seeded
  /// lognormal factor of mean 1 and this coefficient of variation; simulate
  /// reports the mean and p95 iteration over jitter_seeds runs. 0: none.
  double compute_jitter_cv = 0;
  std::int64_t jitter_seeds = 16;
  std::uint64_t jitter_seed = 1;
  RecomputeSpec recompute;  ///< activation recomputation
  std::string attention_backend = "flash";  ///< flash (no score matrix stored) or unfused
  bool overlap_grad_reduce = false;   ///< Megatron's --overlap-grad-reduce (folding)
  bool overlap_param_gather = false;  ///< Megatron's --overlap-param-gather (folding)
  bool a2a_overlap = false;           ///< Megatron's --overlap-moe-expert-parallel-comm (folding)
  /// Megatron-LM's --grad-reduce-in-bf16 (Megatron-Core DDP grad_reduce_in_fp32
  /// = false; folding): the main gradients held and reduced in bf16, where
  /// Megatron-LM keeps them in fp32 under bf16 training (docs/cost-model.md,
  /// "Gradient precision").
  bool grad_reduce_in_bf16 = false;
  /// Megatron-Core DDP's check_for_nan_in_grad (Megatron-LM's
  /// --check-for-nan-in-loss-and-grad, on by default; folding): a norm of every
  /// gradient bucket before its reduce-scatter (docs/cost-model.md, "Gradient
  /// buffer passes"). Megatron-Bridge's performance scripts turn it off.
  bool check_for_nan_in_grad = true;
  /// Megatron-Core DDP's average_in_collective (Megatron-LM's
  /// --ddp-average-in-collective, off by default; folding): the reduce-scatter
  /// averages, so the dense gradients are not multiplied by 1 / (dp x cp) before it.
  bool average_in_collective = false;
  /// Megatron's --data-parallel-sharding-strategy (folding; docs/cost-model.md,
  /// "FSDP"): "optim" (default: the distributed optimizer, ZeRO-1, fp32 master
  /// weights and Adam moments sharded) or "optim_grads_params" (Megatron-FSDP,
  /// ZeRO-3: bf16 weights and fp32 gradients sharded too, each block gathered
  /// per micro-batch).
  std::string data_parallel_sharding_strategy = "optim";
  /// Megatron-Core's token dispatcher (folding): "alltoall" (NCCL AlltoAll of
  /// top-k copies), "deepep" (the flex dispatcher on DeepEP's kernels, which
  /// send a token once per destination node and rank) or "hybridep" (the flex
  /// dispatcher on HybridEP's, the same rule with an NVLink domain for the
  /// node; docs/cost-model.md).
  std::string moe_dispatcher = "alltoall";
  /// Megatron-Core's loss kernel (folding): "none" (its default, the unfused
  /// vocab_parallel_cross_entropy) or "te" (--cross-entropy-loss-fusion
  /// --cross-entropy-fusion-impl te: Transformer Engine's fused Triton kernels,
  /// which read the bf16 logits and write their gradient in place;
  /// docs/cost-model.md, "The model's ends").
  std::string cross_entropy_fusion = "none";
  /// True under Transformer Engine's fused loss ("te").
  bool fused_cross_entropy() const { return cross_entropy_fusion == "te"; }
  /// Megatron-Core's --use-precision-aware-optimizer (folding): Transformer
  /// Engine's FusedAdam, the fp32 master weights kept as 16-bit remainders
  /// beside the bf16 weights (docs/cost-model.md, "Optimizer state").
  bool precision_aware_optimizer = false;
  /// Its Adam moments' dtype: "fp32" (default) or "bf16" (--exp-avg-dtype and
  /// --exp-avg-sq-dtype bf16; needs precision_aware_optimizer).
  std::string optimizer_moments_dtype = "fp32";
  /// Transformer Engine's fused grouped MLP (folding; Megatron-Core's
  /// --use-transformer-engine-op-fuser, NVTE_CUTEDSL_FUSED_GROUPED_MLP=1): the
  /// routed experts' activation and its gradient run in the grouped GEMMs'
  /// epilogues, which also write the next GEMM's MXFP8 operand
  /// (docs/cost-model.md, "Fused grouped MLP").
  bool fused_grouped_mlp = false;
  /// Megatron-Core's CUDA graphs (folding): none by default, as Megatron-LM
  /// (--cuda-graph-impl none).
  CudaGraphs cuda_graphs;
  /// "fp32" (default): the optimizer updates fp32 master weights; "none": it
  /// updates the 16-bit weights themselves, whose sharded gradients are kept
  /// in the weights' dtype (Megatron-FSDP's main params and main grads "auto";
  /// needs data_parallel_sharding_strategy optim_grads_params).
  std::string master_weights = "fp32";
  /// True for the dispatchers that send a token once per destination node and rank (deepep, hybridep).
  bool deduplicating_dispatcher() const { return moe_dispatcher == "deepep" || moe_dispatcher == "hybridep"; }
  /// Knobs the folding planner searches besides the mapping: "precision"
  /// (workload.precision) and "recompute" (schedule.recompute and its fields);
  /// plan/open_knobs.hpp says which values it tries.
  std::vector<std::string> search;
};

/// Whether the scenario shards weights and gradients too (Megatron-FSDP's optim_grads_params).
inline bool fully_sharded(const ScheduleSpec& s) { return s.data_parallel_sharding_strategy == "optim_grads_params"; }
/// Bytes of one main gradient: 4 (fp32, Megatron-LM's default under bf16), 2 with grad_reduce_in_bf16.
inline double main_grad_bytes(const ScheduleSpec& s) { return s.grad_reduce_in_bf16 ? 2.0 : 4.0; }
/// Whether the optimizer keeps fp32 master weights (master_weights "fp32").
inline bool keeps_master_weights(const ScheduleSpec& s) { return s.master_weights != "none"; }
/// Bytes of one gradient as the rank keeps it between the reduction and the
/// step: the main gradient (main_grad_bytes), or without master weights the
/// weights' 2 B (the reduction itself still runs at main_grad_bytes).
inline double kept_grad_bytes(const ScheduleSpec& s) { return keeps_master_weights(s) ? main_grad_bytes(s) : 2.0; }
/// Bytes of one Adam moment: 4 (fp32), 2 with optimizer_moments_dtype bf16.
inline double adam_moment_bytes(const ScheduleSpec& s) { return s.optimizer_moments_dtype == "bf16" ? 2.0 : 4.0; }
/// Bytes of optimizer state per parameter the distributed optimizer shards:
/// the fp32 master weight (4, its 2-byte remainder under
/// precision_aware_optimizer, none under master_weights none) and Adam's two
/// moments: 12, 10, 6, 8 or 4.
inline double optimizer_state_bytes(const ScheduleSpec& s) {
  const double master = !keeps_master_weights(s) ? 0.0 : s.precision_aware_optimizer ? 2.0 : 4.0;
  return master + 2.0 * adam_moment_bytes(s);
}

/// @brief Knobs a planner chose (CLI.md `plan` keys).
struct PlanKnobs {
  std::optional<std::int64_t> degree;
  std::optional<std::int64_t> degree_forward;
  std::optional<std::int64_t> degree_backward;
  std::vector<std::int64_t> slicing_tokens;
  std::optional<std::int64_t> ar_chunk_bytes;
  std::vector<std::int64_t> grad_partition_bytes;
  std::optional<ParallelSpec> parallelism;
  std::optional<std::int64_t> micro_batch_size;  ///< folding: sequences per micro-batch
  /// Folding, when the scenario's schedule.search opened them: the chosen
  /// precision and recomputation.
  std::optional<Precision> precision;
  std::optional<RecomputeSpec> recompute;
};

/// @brief A plan: the best schedule and knobs found for a scenario.
struct PlanSpec {
  std::string scenario;  ///< the scenario's name
  /// The scenario as `plan` was given it (bundled name or path) and its --set
  /// overrides ("field=value", in order): with the knobs, what rebuilds the run.
  std::string scenario_ref;
  std::vector<std::string> scenario_overrides;
  std::string family;
  std::string schedule;
  double iteration_ms = 0;
  double baseline_ms = 0;  ///< schedule none
  double speedup = 0;      ///< baseline_ms / iteration_ms
  PlanKnobs knobs;
};

/// @brief Everything one simulation needs, resolved and validated.
/// Peak bytes of memory a simulation needs per task of its graph: task record,
/// name, both adjacency arrays, the builder's edge list and the engine's
/// timeline and queues. Measured peak RSS per task on the largest runs that
/// fit (docs/reliability.md, "Resource bounds"): 228 B for FlowMoE multi_rank
/// at 65,536 ranks, 235 B at 16,384, 194 B for FoldMoE at a global batch of
/// 65,536; 256 B bounds them.
inline constexpr std::size_t kPeakBytesPerTask = 256;
/// The default memory budget of one simulated graph: 8 GiB, a third of the
/// 24 GiB development machine (docs/reliability.md), so that a plan running a
/// few graphs at once still fits. --max-memory changes it.
inline constexpr std::size_t kDefaultMaxMemoryBytes = std::size_t{8} << 30;

/// @brief Bounds on one run's resources. Not read from files: the CLI sets them.
struct RunLimits {
  std::size_t max_memory_bytes = kDefaultMaxMemoryBytes;  ///< per simulated task graph
  std::size_t max_graph_tasks() const { return max_memory_bytes / kPeakBytesPerTask; }
};

struct ScenarioSpec {
  std::string name;
  ModelSpec model;
  ClusterSpec cluster;
  std::optional<CostProfileSpec> profile;
  ParallelSpec parallel;
  WorkloadSpec workload;
  ScheduleSpec schedule;
  /// Field paths the user set as options (e.g. "schedule.ar_chunk_bytes",
  /// "model.num_layers"): the parallelism, workload and schedule fields the
  /// scenario writes and every `set:` line and --set. Validation rejects an
  /// option that cannot act on the scenario's family (model/options.hpp).
  std::vector<std::string> options;
  RunLimits limits;  ///< set by the command line (--max-memory), not by files
};

const char* to_string(OpClass op);
const char* to_string(Routing routing);
std::optional<Routing> routing_from_string(const std::string& text);
const char* to_string(LinkClass link);
const char* to_string(Provenance provenance);
std::optional<OpClass> op_class_from_string(const std::string& text);
std::optional<LinkClass> link_class_from_string(const std::string& text);

}  // namespace moeplan::model
