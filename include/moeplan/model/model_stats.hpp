#pragma once
// Parameter and FLOP counts of a model (docs/cost-model.md, "Model statistics").

#include <cstdint>

#include <moeplan/model/specs.hpp>

namespace moeplan::model {

/// @brief Parameter counts of one model.
struct ParamCounts {
  std::int64_t total = 0;             ///< every parameter, all experts
  std::int64_t active_per_token = 0;  ///< parameters one token touches (top-k + shared experts)
  std::int64_t embedding = 0;         ///< token (+ position) embeddings and untied LM head
};

/// @brief One block's attention parameters, by how tensor parallelism holds them.
struct AttentionParams {
  std::int64_t split = 0;       ///< split over tp: Q, K, V, O (with MLA: the up-projections and O), their biases
  std::int64_t replicated = 0;  ///< whole on every tp rank: MLA's down-projections and latent norms
  std::int64_t total() const { return split + replicated; }
};

AttentionParams attention_params(const ModelSpec& model);
std::int64_t attention_params_per_layer(const ModelSpec& model);
/// What one tp rank holds of a block's attention: split / tp + replicated.
double attention_params_per_rank(const ModelSpec& model, std::int64_t tp);
/// Weights of the attention GEMMs of one token (no biases or norms): each is 2 FLOPs per token.
/// `replicated` is the part no tp rank splits (MLA's down-projections).
AttentionParams attention_matmul_weights(const ModelSpec& model);
std::int64_t ffn_params(std::int64_t d_model, std::int64_t hidden, FfnType type, bool bias);
std::int64_t norm_params(const ModelSpec& model);
ParamCounts count_params(const ModelSpec& model);

/// Forward FLOPs per token of the weight GEMMs (2 per active weight, LM head
/// included, embedding lookup excluded); Kaplan et al. 2020, C_forward ~ 2N.
double forward_matmul_flops_per_token(const ModelSpec& model);

/// Forward FLOPs per token including causal self-attention over a context of
/// seq_len tokens: 2 * layers * (seq_len / 2) * heads * (qk + v) with qk and v
/// the query/key and value widths of a head (QK^T and AV, each 2 FLOPs per
/// multiply-add; causal mask halves the context): 2 * 2 * layers * (seq_len / 2)
/// * heads * head_dim without MLA.
double forward_flops_per_token(const ModelSpec& model, std::int64_t seq_len);

}  // namespace moeplan::model
