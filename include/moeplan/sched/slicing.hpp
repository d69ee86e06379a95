#pragma once
// How FoldMoE cuts one sequence into attention slices (foldmoe.md section 4.2):
// token-uniform slices, and Algorithm 1's quick-start time-uniform slices,
// plus the token buffer that maps attention slices onto fixed-size MoE
// micro-batches.

#include <cstdint>
#include <vector>

#include <moeplan/model/specs.hpp>

namespace moeplan::sched {

/// d slices of L tokens as equal as integers allow (the first L mod d get one more).
std::vector<std::int64_t> token_uniform_slicing(std::int64_t seq_tokens, std::int64_t degree);

/// FoldMoE Algorithm 1, quick-start time-uniform slicing: the first slice is
/// ceil(L/d) tokens; each later slice j ends at the i >= max(start + 1, j ceil(L/d))
/// minimising |FLOPs(i - start, i) - t_hat| (Eq. 5), t_hat = sum_i FLOPs(1, i) / d.
/// Exactly d slices are returned (the formulation's S = {l_1..l_d}): slice j
/// leaves at least one token for each later slice, and where j ceil(L/d) leaves
/// too few, the prefix bound ceil(j L / d) is used instead; the last slice
/// takes the rest. Every prefix holds at least j L / d tokens. O(L).
/// Requires 1 <= degree <= seq_tokens.
std::vector<std::int64_t> time_uniform_slicing(const model::ModelSpec& model, std::int64_t seq_tokens,
                                               std::int64_t degree);

/// The token buffer (foldmoe.md Fig. 6): for each MoE micro-batch (token
/// ranges `moe_slices`, in order), the index of the attention slice after
/// which the buffer holds all of its tokens.
std::vector<std::size_t> buffer_ready_after(const std::vector<std::int64_t>& attention_slices,
                                            const std::vector<std::int64_t>& moe_slices);

/// For each attention slice, the MoE micro-batches holding any of its tokens
/// (first and last index), for the backward pass.
std::vector<std::pair<std::size_t, std::size_t>> moe_batches_of_slices(
    const std::vector<std::int64_t>& attention_slices, const std::vector<std::int64_t>& moe_slices);

}  // namespace moeplan::sched
