#pragma once
// How the capacity table is shown (issue 17 item 4): JSON (schema
// docs/capacity.schema.json), CSV and text, from plan::CapacityResult alone.
// A row also goes to JSON and back, so that the rows MPI ranks computed reach
// rank 0 exactly (doubles in shortest round-trip form).

#include <string>

#include <moeplan/io/json.hpp>
#include <moeplan/plan/capacity.hpp>

namespace moeplan::output {

/// One row: gpus, plan (or null), tokens_per_s, mfu, memory_bytes_per_gpu,
/// days, gpu_hours, cost, meets_deadline (null where the request or the row
/// has none), bound_by, bound_detail, search counts.
io::Json capacity_row_to_json(const plan::CapacityRow& row);
/// The row capacity_row_to_json wrote; input Error when `j` is not one.
plan::CapacityRow capacity_row_from_json(const io::Json& j);

/// The request's inputs, rows, smallest_gpus and cost_optimal_gpus.
io::Json capacity_to_json(const plan::CapacityRequest& request, const plan::CapacityResult& result);

/// One line per count (header first); `mark` says smallest and cost-optimal.
std::string capacity_to_csv(const plan::CapacityResult& result);

/// The table a person reads, with the answer first.
std::string capacity_to_text(const plan::CapacityRequest& request, const plan::CapacityResult& result);

}  // namespace moeplan::output
