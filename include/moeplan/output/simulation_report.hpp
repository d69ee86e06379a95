#pragma once
// What `moeplan simulate` prints (docs/cli.md, simulate), JSON and text, from
// plan::Simulation alone: the CLI and the Python module print the same.

#include <string>

#include <moeplan/io/json.hpp>
#include <moeplan/plan/family.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::output {

/// The noise summary; the noiseless iteration is the reference for the slowdowns.
io::Json noise_to_json(const plan::NoiseSummary& noise, double noiseless_ms);

/// Named schedules: one object per schedule (evaluation keys,
/// memory_bytes_per_gpu and fits of the scenario's mapping, noise), an array
/// when "all" was asked. The scenario's own mapping: scenario, schedule (its
/// pipeline), degree (pp), iteration_ms, mfu, memory_bytes_per_gpu, fits,
/// bubble_ms, tasks.
io::Json simulation_to_json(const plan::ScenarioRun& run, const plan::Simulation& simulation);

/// The lines a person reads: per schedule its times (and noise, routing), or
/// the mapping's iteration, MFU and memory.
std::string simulation_to_text(const plan::ScenarioRun& run, const plan::Simulation& simulation);

}  // namespace moeplan::output
