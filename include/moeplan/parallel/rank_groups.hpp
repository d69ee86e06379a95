#pragma once
// Megatron-Core's rank groups (RankGenerator, parallel_state.py) for MoE
// Parallel Folding: attention groups over (tp, cp, dp, pp) and expert groups
// over (etp, ep, edp, pp), laid out by one order string whose leftmost
// dimension varies fastest. The default order is "tp-cp-ep-dp-pp"; the
// paper's Listing 1 equals "tp-cp-ep-pp-dp".

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace moeplan::parallel {

using RankGroups = std::vector<std::vector<std::int64_t>>;

/// @brief The sizes a mapping is made of (dp and edp derived from the world).
struct MappingRequest {
  std::int64_t world = 1;
  std::int64_t tp = 1, cp = 1, pp = 1, ep = 1;
  std::optional<std::int64_t> etp;  ///< defaults to tp
  std::int64_t vpp = 1;
  std::string order = "tp-cp-ep-dp-pp";
  std::optional<std::int64_t> num_experts;  ///< checked against ep when given
  /// Only each kind's first group (the one of rank 0): what pricing needs, as
  /// every group of a kind has the same strides. O(group size) instead of
  /// O(world) per kind, which made a folding plan at 2^20 GPUs take hours.
  bool first_groups_only = false;
};

/// @brief Both layer kinds' groups.
struct Mapping {
  std::int64_t dp = 1, edp = 1, etp = 1;
  std::map<std::string, RankGroups> attention;  ///< "tp", "cp", "dp", "pp", "dp-cp" (dense gradients)
  std::map<std::string, RankGroups> expert;     ///< "etp", "ep", "edp", "pp"
};

/// Builds and checks a mapping. Input errors (field "parallelism.<x>"):
/// world not divisible by tp*cp*pp or etp*ep*pp, experts % ep, vpp without pp,
/// an order naming an unknown or repeated dimension or omitting one of size > 1,
/// attention and expert pipeline groups that differ.
Mapping make_mapping(const MappingRequest& request);

/// Megatron's generate_masked_orthogonal_rank_groups: sizes in order (fastest
/// first); `mask` picks the dimensions a group spans. max_groups >= 0 stops
/// after that many groups (in Megatron's order).
RankGroups masked_orthogonal_groups(std::int64_t world, const std::vector<std::int64_t>& sizes,
                                    const std::vector<bool>& mask, std::int64_t max_groups = -1);

}  // namespace moeplan::parallel
