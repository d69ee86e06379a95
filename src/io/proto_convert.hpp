#pragma once
// Protobuf messages -> plain specs. Presence and simple range checks happen
// here (they need to know what was written); cross-field rules live in
// moeplan/model/validate.hpp. Errors carry field paths relative to the message.

#include <moeplan/model/specs.hpp>

#include "io/proto/moeplan.pb.h"

namespace moeplan::io {

model::ModelSpec to_spec(const pb::Model& model);
model::ClusterSpec to_spec(const pb::Cluster& cluster);
model::CostProfileSpec to_spec(const pb::CostProfile& profile);
/// Needs the resolved model and cluster (inline in the message) to derive dp and edp.
model::ScenarioSpec to_spec(const pb::Scenario& scenario);

model::ParallelSpec to_spec(const pb::Parallelism& parallelism, std::int64_t world_size);

pb::CostProfile to_proto(const model::CostProfileSpec& profile);
pb::Parallelism to_proto(const model::ParallelSpec& parallel);
pb::Plan to_proto(const model::PlanSpec& plan, const std::string& version);

}  // namespace moeplan::io
