#pragma once
// Semantic checks on the plain specs. Each failure throws moeplan::Error of
// kind Input whose field path is relative to the spec checked (e.g.
// "moe.top_k", "parallelism.tp"); the loader turns that into a file position.

#include <moeplan/model/specs.hpp>

namespace moeplan::model {

void validate(const ModelSpec& model);
void validate(const ClusterSpec& cluster);
void validate(const CostProfileSpec& profile);
/// Cross-part checks: world size, divisibility of heads and experts, batch split.
void validate(const ScenarioSpec& scenario);

/// True for the schedule names of CLI.md.
bool is_known_schedule(const std::string& name);

}  // namespace moeplan::model
