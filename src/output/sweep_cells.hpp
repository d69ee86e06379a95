#pragma once
// The cells a sweep's CSV and JSON rows share: what a row's knobs say, in one
// spelling for both formats.

#include <cstdint>
#include <string>

#include <moeplan/plan/sweep.hpp>

namespace moeplan::output {

/// "tp1-cp4-pp8-vpp1-ep8-etp1-mb1", or empty (a knob set without a mapping).
std::string sweep_mapping_cell(const model::PlanKnobs& knobs);
/// The gradient bytes all-reduced while layers run (FSMoE's partition, whole
/// bytes per layer, summed); 0 for the other families.
double partition_bytes(const model::PlanKnobs& knobs);
/// The degree of each phase: FSMoE's, else the schedule's one degree
/// (FoldMoE d, FlowMoE R, a mapping's pp).
std::int64_t degree_forward(const plan::SweepRow& row);
std::int64_t degree_backward(const plan::SweepRow& row);

}  // namespace moeplan::output
