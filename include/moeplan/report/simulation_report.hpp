#pragma once
// What `moeplan simulate --json` prints (docs/cli.md, simulate), from the
// library's results alone: the CLI and the Python module print the same.

#include <string>
#include <vector>

#include <moeplan/io/json.hpp>
#include <moeplan/plan/folding.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/plan/simulate.hpp>

namespace moeplan::report {

/// The noise summary; the noiseless iteration is the reference for the slowdowns.
io::Json noise_to_json(const plan::NoiseSummary& noise, double noiseless_ms);

/// One object per simulated schedule (evaluation keys, memory_bytes_per_gpu,
/// fits, noise); one object when `all` is false (one schedule asked), else an array.
io::Json simulation_to_json(const plan::ScenarioRun& run, const std::vector<plan::SimulatedSchedule>& results,
                            bool all);

/// A folding scenario's own mapping: scenario, schedule (its pipeline), degree
/// (pp), iteration_ms, mfu, memory_bytes_per_gpu, fits, bubble_ms, tasks.
io::Json folding_simulation_to_json(const std::string& scenario, const plan::FoldingResult& result,
                                    const plan::FoldingTrace& trace);

}  // namespace moeplan::report
