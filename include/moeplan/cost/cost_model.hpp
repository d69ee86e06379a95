#pragma once
// The cost model: the only place where time comes from. A profile's lines
// t_ms = alpha_ms + n * beta_ms (FSMoE section 4.1) are looked up per
// (operation, link class) and moved to the asked group size with the
// bus-bandwidth factors of bus_factor.hpp. docs/cost-model.md has the rules.

#include <array>
#include <cstdint>
#include <vector>

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

/// @brief Predicts operation times from one cost profile.
class CostModel {
 public:
  /// Throws an input Error (field "costs") if the profile is unusable.
  explicit CostModel(const model::CostProfileSpec& profile);

  /// GEMM or attention time for flops FLOPs on one GPU.
  Milliseconds compute(model::OpClass op, double flops) const;
  /// A collective of size_bytes (nccl-tests "size") over group ranks on a link
  /// class. A group of one costs nothing: no kernel is launched.
  Milliseconds communication(model::OpClass op, model::LinkClass link, std::int64_t group, double size_bytes) const;
  /// Either of the above, by op class.
  Milliseconds predict(model::OpClass op, model::LinkClass link, std::int64_t group, double size) const;

  /// The line used for (op, link, group): the measured group's line, scaled.
  LinearModel line_for(model::OpClass op, model::LinkClass link, std::int64_t group) const;
  bool has(model::OpClass op, model::LinkClass link) const;
  /// The group size of the measured line nearest to group (for reporting).
  std::int64_t measured_group(model::OpClass op, model::LinkClass link, std::int64_t group) const;

  /// Compute slow-down while a communication kernel overlaps (profile field, default 1.0).
  double overlap_compute_slowdown() const { return overlap_compute_slowdown_; }
  const std::string& profile_name() const { return profile_name_; }

 private:
  static constexpr std::size_t kOps = 7;
  static constexpr std::size_t kLinks = 3;
  const model::LinearCostSpec& nearest(model::OpClass op, model::LinkClass link, std::int64_t group) const;

  std::string profile_name_;
  double overlap_compute_slowdown_ = 1.0;
  // Lines per [op][link], sorted by measured group size.
  std::array<std::array<std::vector<model::LinearCostSpec>, kLinks>, kOps> lines_;
};

/// An expert FFN of `gemms` equal GEMMs (2 for GELU FFN, 3 for SwiGLU) doing
/// `flops` in all: each GEMM pays its own startup (FSMoE section 4.1: alpha_exp
/// and beta_exp are the GEMM line times the number of GEMMs).
Milliseconds expert_ffn_time(const CostModel& costs, double flops, int gemms);

/// Link class of a group of ranks on nodes of gpus_per_node consecutive ranks:
/// intra when all share a node, else inter (the inter-node hop bounds the
/// collective's bus bandwidth; docs/cost-model.md "Groups that span nodes").
model::LinkClass link_class_of(const std::vector<std::int64_t>& ranks, std::int64_t gpus_per_node);

}  // namespace moeplan::cost
