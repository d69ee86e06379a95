#pragma once
// The rules the layer-schedule families share (FoldMoE, FSMoE, FlowMoE: a
// schedule of the transformer blocks on the scenario's own mapping, every
// layer on one pipeline stage), so that each family's rules.cpp states only
// what is its own.

#include <string>
#include <vector>

#include <moeplan/model/options.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::family {

/// Options that cannot act on a layer schedule: pipeline and rank-order
/// fields, the embedding and output layer, memory and the MFU's peaks,
/// stragglers in symmetric mode.
std::vector<model::OptionRule> layer_schedule_option_rules();

/// The model-shape options of builders that make every block an MoE block.
std::vector<model::OptionRule> all_moe_block_option_rules();

/// Input error (schedule.family) for a dense model (no moe): `family`'s
/// schedules overlap expert communication, which a dense model has none of.
void validate_moe_model(const model::ScenarioSpec& scenario, const std::string& family);

/// Input error (parallelism.pp) unless pp = vpp = 1: `family`'s schedules run
/// every layer on one pipeline stage.
void validate_one_stage(const model::ScenarioSpec& scenario, const std::string& family);

/// Input error (model.moe, model.moe.first_k_dense) for a model with dense
/// blocks: `family`'s schedules build every block as an MoE block.
void validate_all_moe_blocks(const model::ScenarioSpec& scenario, const std::string& family);

/// The fields a layer schedule reads of the family-dependent ones: the
/// schedule's name and degree, the graph mode, noise, routing, and the
/// profile's overlap slow-downs (the engine runs compute beside communication).
std::vector<std::string> layer_schedule_read_fields();

}  // namespace moeplan::family
