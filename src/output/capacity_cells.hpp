#pragma once
// The cells the capacity table's CSV and text share.

#include <cstdint>
#include <string>

#include <moeplan/plan/capacity.hpp>

namespace moeplan::output {

/// "tp1-cp2-pp8-vpp1-ep8-etp1-mb1".
std::string capacity_mapping_cell(const cost::MappingConfig& c);
/// "none", or the schedule and its degrees: "fsmoe/fsmoe r8/8", "flowmoe/flowmoe R2".
std::string overlap_cell(const plan::CapacityPlan& p);
/// "smallest", "cost-optimal", both, or "".
std::string mark(const plan::CapacityResult& r, std::int64_t gpus);

}  // namespace moeplan::output
