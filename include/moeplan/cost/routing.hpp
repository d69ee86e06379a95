#pragma once
// Uneven expert load (docs/cost-model.md, "Uneven expert load"): which experts
// each rank's token slots go to, drawn by a seeded sampler whose every number
// is the same bytes on every machine (its own PRNG, sampling and exp/log: the
// std::*_distribution and libm results differ between standard libraries),
// and the send, receive, compute and drop counts that follow on each rank.

#include <cstdint>
#include <optional>
#include <vector>

#include <moeplan/core/portable_math.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// @brief xoshiro256** 1.0 (Blackman and Vigna 2018, prng.di.unimi.it), its
/// state filled by splitmix64 (Steele et al. 2014) from one 64-bit seed.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  /// Uniform in [0, 1): the top 53 bits, times 2^-53.
  double uniform();
  /// Uniform in [0, n), n > 0, by rejection (no modulo bias).
  std::uint64_t below(std::uint64_t n);

 private:
  std::uint64_t s_[4];
};

/// A seed for one stream of draws: splitmix64's finalizer over the user's seed
/// and the stream's coordinates (purpose, MoE layer, rank), so that every
/// stream is independent of the order the others are drawn in.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t purpose, std::uint64_t layer, std::uint64_t rank);

/// The portable exp and log of core/portable_math.hpp (the sampler's k^-s).
using moeplan::portable_exp;
using moeplan::portable_log;

/// Zipf probabilities by popularity rank: p_k = k^-s / sum_j j^-s, k = 1..E.
std::vector<double> zipf_probabilities(std::int64_t experts, double s);

/// Each expert id's probability in MoE layer `moe_layer` (0-based among MoE
/// layers): balanced 1/E; zipf the Zipf probabilities, popularity ranks given
/// to expert ids by a permutation drawn per layer from the seed; histogram the
/// counts over their sum (every layer alike).
std::vector<double> expert_probabilities(const model::ModelSpec& model, const model::WorkloadSpec& workload,
                                         std::int64_t moe_layer);

/// Below this n x min(p, 1 - p) a binomial is drawn exactly by inversion;
/// from it on by the normal approximation (docs/cost-model.md).
inline constexpr double kBinomialInversionBelow = 30.0;

/// One binomial(n, p) draw: exact inversion when n min(p, 1-p) < 30, else
/// round(n p + sqrt(n p (1-p)) z) clamped to [0, n], z the Irwin-Hall sum of
/// 12 uniforms minus 6 (mean 0, variance 1).
std::int64_t sample_binomial(std::int64_t n, double p, Rng& rng);

/// n slots spread over the experts by p (summing to 1): a multinomial draw,
/// by sequential conditional binomials (expert e gets binomial(n left,
/// p_e / the probability left)).
std::vector<std::int64_t> sample_multinomial(std::int64_t n, const std::vector<double>& p, Rng& rng);

/// @brief One rank's load in one MoE layer, in token slots (tokens x top_k) of one micro-batch.
struct RankLoad {
  double routed_slots = 0;   ///< slots its tokens chose (tokens x top_k)
  double send_slots = 0;     ///< its AlltoAll send buffer, its own experts' share included (nccl-tests "size")
  double recv_slots = 0;     ///< its AlltoAll receive buffer, its own share included
  double expert_slots = 0;   ///< slots its experts compute
  double dropped_slots = 0;  ///< of the slots it routed, those beyond capacity
  double a2a_slots() const { return send_slots > recv_slots ? send_slots : recv_slots; }
};

/// The loads of one EP group of `counts.size()` ranks, counts[i][e] the slots
/// source rank i routes to expert e, experts placed in contiguous blocks (e
/// on rank e / (E / ep)). capacity: slots per (source rank, expert) buffer,
/// beyond which slots are dropped and to which the buffer is padded; none =
/// dropless (all-to-all-v of the real counts).
std::vector<RankLoad> group_loads(const std::vector<std::vector<std::int64_t>>& counts,
                                  std::optional<double> capacity);

/// @brief The routing of every MoE layer on the ranks drawn.
struct RoutedLoads {
  model::Routing routing = model::Routing::Balanced;
  bool padded = true;  ///< capacity buffers (sizes are balanced's); false: dropless all-to-all-v
  std::vector<std::vector<RankLoad>> layers;  ///< [MoE layer][rank]
  double dropped_fraction = 0;                ///< dropped slots / routed slots, every layer and rank
};

/// Draws the routing of `ranks` ranks (a multiple of ep: EP groups of
/// consecutive ranks, as FlowMoE's multi_rank graph places them; ep of them in
/// symmetric mode, one group standing for all) for every MoE layer of
/// micro-batch 0. Balanced routing draws nothing: every rank gets the
/// expected load exactly.
RoutedLoads route(const model::ScenarioSpec& scenario, std::int64_t ranks);
/// The same for EP groups given by their ranks (Megatron's groups of a
/// multi_rank graph, strided when etp > 1): layers[l][r] is rank r's load
/// (every rank of 0..max listed), each rank drawing its own stream as above,
/// so consecutive groups give exactly route(scenario, ranks).
RoutedLoads route(const model::ScenarioSpec& scenario, const std::vector<std::vector<std::int64_t>>& ep_groups);

/// One MoE layer's sizes for a rank with this load: AlltoAll bytes of
/// max(send, receive) slots, expert GEMMs of its expert slots (shared experts
/// and the gate are unchanged), etp gathers of its received slots.
MoeLayerSizes moe_layer_sizes_for(const model::ModelSpec& model, const model::ParallelSpec& parallel,
                                  const model::WorkloadSpec& workload, const RankLoad& load);

/// The sizes symmetric mode prices every MoE layer at: moe_layer_sizes when
/// routing is balanced or padded (capacity sizes do not depend on the
/// routing); dropless, the most loaded rank's (largest max(send, receive),
/// then most expert slots) of the most loaded MoE layer of one EP group.
MoeLayerSizes routed_moe_layer_sizes(const model::ScenarioSpec& scenario);

/// The rank of a layer's loads symmetric mode prices: largest a2a_slots, ties to more expert slots, then the lowest rank.
std::size_t most_loaded_rank(const std::vector<RankLoad>& loads);

}  // namespace moeplan::cost
