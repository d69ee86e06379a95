#pragma once
// Tuning FlowMoE's all-reduce chunk size Sp (flowmoe.md section 4.1, Appendix
// D): Bayesian optimisation with a Gaussian-process surrogate (Matern 5/2
// kernel) and Expected Improvement (xi = 0.1), one seeded random initial
// sample, 8 samples by default; grid and random search to compare with
// (Table A.3); and the re-tuning trigger of Appendix K.2. The objective is a
// callback: the simulator here, a measured iteration time from an executor.

#include <cstdint>
#include <functional>
#include <vector>

namespace moeplan::flowmoe {

/// Iteration time (ms) for a chunk size (bytes).
using ChunkObjective = std::function<double(std::int64_t chunk_bytes)>;

/// @brief One evaluation of the objective.
struct TunerSample {
  std::int64_t chunk_bytes = 0;
  double iteration_ms = 0;
};

/// @brief What a tuner found, with every sample in the order taken.
struct TunerResult {
  std::int64_t best_bytes = 0;
  double best_ms = 0;
  std::vector<TunerSample> trace;
};

/// @brief Bayesian-optimisation settings (Appendix D).
struct BayesSettings {
  std::uint64_t seed = 7;
  std::int32_t samples = 8;       ///< objective evaluations, the random initial one included
  double xi = 0.1;                ///< EI exploration, in units of the standardised objective
  std::int32_t candidates = 512;  ///< EI is maximised over this many points of the (log) space
};

/// The search space: [max(floor, tiny), max_bytes]; FlowMoE's code starts at 128 KiB.
inline constexpr std::int64_t kMinChunkBytes = 128 * 1024;

TunerResult tune_bayesian(const ChunkObjective& objective, std::int64_t min_bytes, std::int64_t max_bytes,
                          const BayesSettings& settings = {});
/// `points` log-spaced sizes from min to max.
TunerResult tune_grid(const ChunkObjective& objective, std::int64_t min_bytes, std::int64_t max_bytes,
                      std::int32_t points = 8);
/// One seeded random size (log-uniform).
TunerResult tune_random(const ChunkObjective& objective, std::int64_t min_bytes, std::int64_t max_bytes,
                        std::uint64_t seed = 7);

/// Appendix K.2, Eq. A.11: re-run BO when |T - F(best)| / F(best) > delta.
bool needs_retune(double observed_ms, double predicted_best_ms, double delta);

}  // namespace moeplan::flowmoe
