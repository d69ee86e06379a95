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

std::int64_t attention_params_per_layer(const ModelSpec& model);
std::int64_t ffn_params(std::int64_t d_model, std::int64_t hidden, FfnType type, bool bias);
std::int64_t norm_params(const ModelSpec& model);
ParamCounts count_params(const ModelSpec& model);

/// Forward FLOPs per token of the weight GEMMs (2 per active weight, LM head
/// included, embedding lookup excluded); Kaplan et al. 2020, C_forward ~ 2N.
double forward_matmul_flops_per_token(const ModelSpec& model);

/// Forward FLOPs per token including causal self-attention over a context of
/// seq_len tokens: 2 * 2 * layers * (seq_len / 2) * heads * head_dim
/// (QK^T and AV, each 2 FLOPs per multiply-add; causal mask halves the context).
double forward_flops_per_token(const ModelSpec& model, std::int64_t seq_len);

}  // namespace moeplan::model
