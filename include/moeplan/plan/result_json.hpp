#pragma once
// The JSON of the results every family and search shares (docs/cli.md,
// simulate and plan keys): one evaluated schedule, one priced mapping. The
// search records (plan/search_record.hpp) and the reporters (src/output)
// write them the same way.

#include <string>

#include <moeplan/io/json.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/mapping_run.hpp>

namespace moeplan::plan {

/// The keys every evaluated schedule shares, in order: schedule, degree, the
/// iteration's times (iteration, forward, backward, compute, comm, exposed
/// comm, bubble, ms) and tasks; `simulate` and a sweep's JSON rows both write them.
void set_evaluation_times(io::Json& j, const Evaluation& e);

/// CLI.md `simulate` keys of one evaluated schedule.
io::Json evaluation_to_json(const std::string& scenario, const Evaluation& e);

/// A priced mapping: parallelism (with micro_batch_size), iteration_ms, mfu,
/// memory_bytes_per_gpu, fits, breakdown.
io::Json mapping_to_json(const MappingResult& mapping);

}  // namespace moeplan::plan
