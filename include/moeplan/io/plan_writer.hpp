#pragma once
// Writing a plan: Protobuf text format, or JSON (CLI.md `plan` keys) when the
// file name ends in ".json".

#include <string>

#include <moeplan/io/json.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::io {

/// The `knobs` object of CLI.md: degree, degree_forward, degree_backward,
/// slicing, ar_chunk_bytes, grad_partition_bytes, parallelism, micro_batch_size, where set.
Json knobs_to_json(const model::PlanKnobs& knobs);
Json parallelism_to_json(const model::ParallelSpec& parallel);

/// CLI.md's plan keys: scenario, schedule, iteration_ms, baseline_ms, speedup, knobs.
Json plan_spec_to_json(const model::PlanSpec& plan);

std::string plan_to_textproto(const model::PlanSpec& plan);

}  // namespace moeplan::io
