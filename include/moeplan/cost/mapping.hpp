#pragma once
// A 5D parallel mapping of Megatron-Core (tp, cp, pp, vpp, ep, etp and the
// micro-batch size; dp and edp follow from the world size) as the mapping
// searches and the memory model take it (MoE Parallel Folding, section 3).

#include <cstdint>
#include <vector>

#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief One 5D mapping and its micro-batch size.
struct MappingConfig {
  std::int64_t tp = 1, cp = 1, pp = 1, vpp = 1, ep = 1, etp = 1, micro_batch = 1;
  std::int64_t dp = 1, edp = 1;  ///< derived
  /// Blocks of each virtual stage in model order (pp x vpp of them): Megatron's
  /// pipeline layout; empty: num_layers / (pp x vpp) each.
  std::vector<std::int64_t> chunk_layers = {};

  /// As a scenario's parallelism (sequence parallel, as Megatron requires with MoE and TP).
  model::ParallelSpec parallel_spec() const;
  /// From a scenario's parallelism and micro-batch size.
  static MappingConfig from(const model::ParallelSpec& parallel, std::int64_t micro_batch);
};

/// The same mapping (dp and edp aside: they follow from the others and the world).
bool same_mapping(const MappingConfig& a, const MappingConfig& b);

/// Whether some block of the model has a dense FFN instead of experts.
bool has_dense_blocks(const model::ModelSpec& model);

/// @brief How many MoE and dense blocks one pipeline stage holds.
struct StageBlocks {
  double moe = 0;
  double dense = 0;
};

/// Blocks of each virtual stage in model order: the mapping's layout, else
/// num_layers / (pp vpp) each. Input error (field parallelism.pipeline_layout)
/// for a layout of other than pp x vpp stages or other than num_layers blocks,
/// and (field parallelism.pp) when the layers do not split evenly without one.
std::vector<std::int64_t> chunk_layer_counts(const model::ModelSpec& model, const MappingConfig& c);

/// The blocks pipeline stage `stage` holds. Megatron-Core gives model chunk c
/// of stage r the layers of virtual stage c pp + r, consecutive blocks in model
/// order (chunk_layer_counts). A model of MoE blocks split evenly has L / pp of
/// them on every stage.
StageBlocks stage_blocks(const model::ModelSpec& model, const MappingConfig& c, std::int64_t stage);

}  // namespace moeplan::cost
