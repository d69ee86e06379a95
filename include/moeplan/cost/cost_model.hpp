#pragma once
// The cost model: the only place where time comes from. A profile's lines
// t_ms = alpha_ms + n * beta_ms (FSMoE section 4.1) are looked up per
// (operation, link class) and moved to the group being priced: to its size
// with the bus-bandwidth factors of bus_factor.hpp, to its placement on nodes
// with the shared-NIC rule, and an AlltoAll across nodes is split into the
// part that crosses the network and the part that stays on the node.
// docs/cost-model.md has the rules and their sources.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/cost/gemm_shape_model.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief Milliseconds, the unit every predicted time carries.
struct Milliseconds {
  double value = 0;
};

/// @brief One alpha-beta line, ready to evaluate.
struct LinearModel {
  double alpha_ms = 0;
  double beta_ms_per_unit = 0;
  double predict_ms(double units) const { return alpha_ms + units * beta_ms_per_unit; }
};

/// @brief Where a communicator's ranks sit on the cluster. A "node" here is
/// the cluster's link domain (ClusterSpec::link_domain: the NVLink domain, or
/// the node when it has none larger).
struct GroupShape {
  std::int64_t size = 1;            ///< ranks in the communicator
  std::int64_t ranks_per_node = 1;  ///< members in one link domain (the most in any)
  std::int64_t gpus_per_node = 1;   ///< link-domain size of the cluster
  std::int64_t nics_per_node = 1;   ///< inter-link ports of a link domain
  /// Communicators of the same kind crossing one node at once; by default all
  /// of them (gpus_per_node / ranks_per_node), as in a data-parallel step.
  std::int64_t concurrent_groups = 1;

  /// Intra when every member shares one node.
  model::LinkClass link() const { return ranks_per_node >= size ? model::LinkClass::Intra : model::LinkClass::Inter; }
};

/// The shape of a group given its ranks, on a cluster whose consecutive ranks
/// fill nodes; every group of its kind runs at once.
GroupShape group_shape(const std::vector<std::int64_t>& ranks, const model::ClusterSpec& cluster);
/// The shape of a group of `size` ranks spaced `stride` apart (Megatron's rank
/// order: ranks r, r + stride, ...), every group of its kind running at once.
GroupShape strided_group_shape(std::int64_t size, std::int64_t stride, const model::ClusterSpec& cluster);

/// @brief The line(s) of a collective on a group: an AlltoAll across nodes
/// has a network part and an on-node part that run at once (time = the larger).
struct CommLines {
  LinearModel main;                      ///< the whole collective, or an AlltoAll's network part
  std::optional<LinearModel> node_part;  ///< an inter-node AlltoAll's on-node part
  double predict_ms(double bytes) const;
  /// The part that takes longer at this size (for closed forms that need one line).
  LinearModel dominant(double bytes) const;
};

/// @brief Predicts operation times from one cost profile.
class CostModel {
 public:
  /// Throws an input Error (field "costs") if the profile is unusable.
  explicit CostModel(const model::CostProfileSpec& profile);

  /// GEMM or attention time for flops FLOPs on one GPU.
  Milliseconds compute(model::OpClass op, double flops) const;
  /// A GEMM of known shape: by the profile's GEMM shape model when it has one
  /// (gemm_shape_model.hpp), else by the gemm line on its 2 m n k batch FLOPs.
  Milliseconds gemm(const GemmShape& shape) const;
  /// An attention task of `flops` FLOPs (whole sequences' attention_flops of
  /// `queries` queries after `context - queries` earlier tokens; backward 2x):
  /// by the profile's attention shape model when it has one (projections as
  /// GEMMs by gemm(), the core tile by tile: attention_shape.hpp), else by the
  /// attention line on its FLOPs, as before.
  Milliseconds attention(const model::ModelSpec& model, std::int64_t queries, std::int64_t context,
                         double flops) const;
  /// The causal core alone, `core_flops` of attention_core_flops for the
  /// pass (twice the forward's backward; its projections priced elsewhere): by
  /// the shape model's core when the profile has one, else by
  /// attention_line(pass, model.head_dim).
  Milliseconds attention_core(const model::ModelSpec& model, std::int64_t queries, std::int64_t context,
                              double core_flops, model::AttentionPass pass) const;
  /// The ATTENTION line that prices a fused core of this pass and query/key
  /// head dim: the profile's most specific (pass and head dim, pass, head dim,
  /// then the generic line).
  LinearModel attention_line(model::AttentionPass pass, std::int64_t head_dim) const;
  /// Memory-bound work of `bytes` bytes read and written by one named kernel
  /// (model::kFusedCrossEntropyKernel) on the profile's ELEMENTWISE line for
  /// that kernel, measured or published; empty when the profile has none (the
  /// caller prices it on the generic ELEMENTWISE line, with its neighbours).
  std::optional<Milliseconds> kernel_memory(const std::string& kernel, double bytes) const;
  /// The profile's attention shape model, if it has one.
  const std::optional<model::AttentionShapeModelSpec>& attention_shape_model() const { return attention_shape_; }
  /// The host's issue time of an eager MoE block (cost/host_issue.hpp); empty: not priced.
  const std::optional<model::HostIssueModelSpec>& host_issue() const { return host_issue_; }
  /// The profile's GEMM shape model, if it has one.
  const std::optional<model::GemmShapeModelSpec>& gemm_shape_model() const { return gemm_shape_; }
  /// A collective of size_bytes (nccl-tests "size") over a group. A group of
  /// one costs nothing: no kernel is launched.
  Milliseconds communication(model::OpClass op, const GroupShape& group, double size_bytes) const;
  /// The line(s) communication() evaluates.
  CommLines lines_for(model::OpClass op, const GroupShape& group) const;
  /// A broadcast of size_bytes from one rank to the group, on the group's
  /// all-gather line(s): nccl-tests (doc/PERFORMANCE.md, "Broadcast" and
  /// "Summary") defines a broadcast's busbw = algbw (all data leaves the root,
  /// t = S/B) and an all-gather's busbw = algbw (n-1)/n of its output, so at
  /// one bus bandwidth a broadcast of S bytes takes the time of an all-gather
  /// whose output is S n/(n-1). A group of one costs nothing.
  Milliseconds broadcast(const GroupShape& group, double size_bytes) const;

  /// The measured line for (op, link) moved to `group` ranks by the bus
  /// factors alone, keeping the measured placement (the `cost` command's
  /// query without a placement). A group of one costs nothing.
  Milliseconds predict(model::OpClass op, model::LinkClass link, std::int64_t group, double size) const;
  LinearModel line_for(model::OpClass op, model::LinkClass link, std::int64_t group) const;
  bool has(model::OpClass op, model::LinkClass link) const;
  /// The group size of the measured line nearest to group (for reporting).
  std::int64_t measured_group(model::OpClass op, model::LinkClass link, std::int64_t group) const;

  /// Compute slow-down while a communication kernel overlaps (profile field, default 1.0).
  double overlap_compute_slowdown() const { return overlap_compute_slowdown_; }
  /// Communication slow-down while compute of its rank runs (profile field, default 1.0).
  double overlap_comm_slowdown() const { return overlap_comm_slowdown_; }
  const std::string& profile_name() const { return profile_name_; }

 private:
  static constexpr std::size_t kOps = model::kOpClassCount;
  static constexpr std::size_t kLinks = 3;
  const model::LinearCostSpec& nearest(model::OpClass op, model::LinkClass link, std::int64_t group) const;
  LinearModel network_line(model::OpClass op, const GroupShape& group) const;
  LinearModel node_part_line(const GroupShape& group) const;

  std::string profile_name_;
  double overlap_compute_slowdown_ = 1.0;
  double overlap_comm_slowdown_ = 1.0;
  std::optional<model::GemmShapeModelSpec> gemm_shape_;
  std::optional<model::AttentionShapeModelSpec> attention_shape_;
  std::optional<model::HostIssueModelSpec> host_issue_;
  // Lines per [op][link], sorted by measured group size.
  std::array<std::array<std::vector<model::LinearCostSpec>, kLinks>, kOps> lines_;
  // ATTENTION lines with a pass or a head dim (attention_line()).
  std::vector<model::LinearCostSpec> attention_lines_;
  // ELEMENTWISE lines of one named kernel (kernel_memory()).
  std::vector<model::LinearCostSpec> kernel_lines_;
};

/// Share of a node's inter-node bandwidth one communicator gets: its members
/// drive at most min(members, NICs) of the node's NICs, and concurrent
/// communicators split the node fairly: min(min(m, nics) / nics, 1 / k).
double nic_share(std::int64_t ranks_per_node, std::int64_t nics_per_node, std::int64_t concurrent_groups);

/// An expert FFN of `gemms` equal GEMMs (2 for GELU FFN, 3 for SwiGLU) doing
/// `flops` in all: each GEMM pays its own startup (FSMoE section 4.1: alpha_exp
/// and beta_exp are the GEMM line times the number of GEMMs), on the gemm line
/// or, for FP8 experts, the gemm_fp8 line.
Milliseconds expert_ffn_time(const CostModel& costs, double flops, int gemms,
                             model::OpClass op = model::OpClass::Gemm);

/// Link class of a group of ranks on nodes of gpus_per_node consecutive ranks:
/// intra when all share a node, else inter.
model::LinkClass link_class_of(const std::vector<std::int64_t>& ranks, std::int64_t gpus_per_node);

}  // namespace moeplan::cost
