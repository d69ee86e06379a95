#pragma once
// workload.routing_histogram_ref: a per-expert token histogram (e.g. counted
// from a real router's choices), CSV with one line per expert:
//
//   # optional comment lines
//   expert,tokens
//   0,18234
//   1,9120
//   ...
//
// Expert ids run 0, 1, 2, ... in order; tokens are non-negative numbers.

#include <string>
#include <vector>

namespace moeplan::io {

/// Tokens per expert id, read from `path`; an input error located at the
/// offending line of the file (exit 2) when it does not follow the format.
std::vector<double> read_routing_histogram(const std::string& path);

/// Where `ref` names a histogram, tried in order: beside the referencing file
/// (none when the reference was typed on the command line), as given, then
/// bundled in scenarios/routing/ (each also with ".csv" appended when `ref`
/// has no '/'), as model_ref and cluster_ref resolve. An input error lists the
/// places tried.
std::string resolve_routing_histogram(const std::string& ref, const std::string& referencing_file);

}  // namespace moeplan::io
