#pragma once
// Semantic checks on the plain specs. Each failure throws moeplan::Error of
// kind Input whose field path is relative to the spec checked (e.g.
// "moe.top_k", "parallelism.tp"); the loader turns that into a file position.

#include <cstdint>
#include <string>

#include <moeplan/model/specs.hpp>

namespace moeplan::model {

void validate(const ModelSpec& model);
void validate(const ClusterSpec& cluster);
void validate(const CostProfileSpec& profile);
/// The checks of one cost line of a profile, alone (as `moeplan fit` makes it):
/// signs, plausible magnitudes of alpha and beta (src/model/validate.cpp gives
/// each bound's source), group sizes and the link of its op. Fields are named
/// "<at>.alpha_ms" etc., or "alpha_ms" when at is empty.
void validate_cost_line(const LinearCostSpec& line, const std::string& at);
/// The checks of a GEMM shape model block (ranges in src/model/validate.cpp),
/// fields named "<at>.units" etc.
void validate_gemm_shape(const GemmShapeModelSpec& model, const std::string& at);
/// Ranges of an attention shape model (field names under `at`).
void validate_attention_shape(const AttentionShapeModelSpec& model, const std::string& at);
/// Its two rates as files give them, checked before conversion (as validate_peak_tflops).
void validate_gemm_shape_rates(double peak_tflops, double memory_gbytes_per_s, const std::string& at);
/// Cross-part checks: world size, divisibility of heads and experts, batch split.
void validate(const ScenarioSpec& scenario);
/// What the scenario's workload.precision needs (part of validate): a 2-byte
/// model, FP8 tensor cores (MX ones for mxfp8) and a profile that prices FP8
/// GEMMs and casts. Input error naming workload.precision otherwise.
void validate_precision(const ScenarioSpec& scenario);

/// Context parallelism's rule for heads (docs/cost-model.md, "Context
/// parallelism"): a2a exchanges heads for the sequence, so the query and K/V
/// heads per tp rank must split over cp (a2a+p2p: over its a2a size), as
/// Transformer Engine's exchange requires; and a2a+p2p's two sizes multiply
/// to cp. Input error naming parallelism.cp_comm_type or
/// parallelism.hierarchical_cp_sizes otherwise; p2p and allgather split no heads.
void validate_context_parallel(const ModelSpec& model, const ParallelSpec& parallel);

/// The one tensor-parallel rule for attention heads, used by every command:
/// Megatron-Core's (TransformerConfig: num_attention_heads and num_query_groups
/// must both be multiples of tensor_model_parallel_size), so tp divides both
/// the query heads and the KV heads and KV heads are never replicated. Throws
/// an input error on field "parallelism.tp" naming num_heads, num_kv_heads and tp.
void validate_tensor_parallel_heads(const ModelSpec& model, std::int64_t tp);

/// Hardware figures in the units files and --set give them, against their
/// plausible ranges (src/model/validate.cpp gives each bound's source). The
/// loader checks them before converting to FLOP/s or bytes, so that a value
/// whose conversion overflows is named as given ("1e+300 GiB is outside the
/// plausible range [0.25, 16384] GiB"), not as "inf". Input errors on `field`.
/// A peak of 0 (the GPU lacks that precision) and negative peaks (refused by
/// validate) pass validate_peak_tflops.
void validate_peak_tflops(double tflops, const std::string& field);
void validate_memory_gib(double gib, const std::string& field);
void validate_link_gbit_s(double gbit_s, const std::string& field);

}  // namespace moeplan::model
