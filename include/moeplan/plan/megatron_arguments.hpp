#pragma once
// A mapping plan as Megatron-LM's training arguments (`plan --emit
// megatron`): the parallel sizes, virtual stages, micro-batch and recompute
// (megatron/training/arguments.py), and a comment line with what the plan
// assumed (rank order, optimizer overlap). The mapping searches' records print it.

#include <string>

#include <moeplan/model/specs.hpp>
#include <moeplan/plan/plan_result.hpp>

namespace moeplan::plan {

/// The chosen candidate's mapping (its knobs' parallelism and micro-batch size) as Megatron-LM arguments.
std::string megatron_arguments(const PlanResult& result, const model::ScenarioSpec& scenario);

}  // namespace moeplan::plan
