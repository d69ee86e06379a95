// A scenario (or plan) to a Chakra trace: the graph `simulate` builds and runs
// for it, exported with its timeline.

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/interop/chakra.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/plan/simulate.hpp>

namespace moeplan::interop {

ScenarioChakraExport export_scenario_chakra(const plan::ScenarioRun& run, const std::string& schedule,
                                            std::optional<std::int64_t> degree, ChakraFileSink& sink) {
  const model::ScenarioSpec& spec = run.spec();
  // A trace holds one graph; noise would need one per seed, and which one would be arbitrary.
  if (spec.schedule.compute_jitter_cv > 0)
    throw Error(ErrorKind::Input,
                "export-chakra writes the noiseless graph; a trace has no noise model (`moeplan simulate` reports the "
                "mean and p95 under noise)",
                "schedule.compute_jitter_cv");
  const plan::ScenarioGraph graph = plan::scenario_graph(run, schedule, degree);
  // ASTRA-sim runs a collective over the files of its members: a rank that
  // stands for others would leave it waiting for files that are not there
  // (it stops with exit 0 and no result).
  if (graph.representative)
    throw Error(ErrorKind::Input,
                fmt::format("{}; ASTRA-sim needs a file for every rank, each collective over its real group, so "
                            "export-chakra writes only graphs of every rank",
                            graph.note),
                "scenario");
  ScenarioChakraExport out;
  ChakraExportOptions options;
  options.scenario = spec.name;
  options.schedule = out.schedule = graph.built.schedule;
  options.rank_compute_slowdown = graph.built.rank_compute_slowdown;
  options.dtype_bytes = static_cast<double>(spec.model.dtype_bytes);
  out.iteration_ms = graph.timeline.makespan_ms;
  out.trace = export_chakra(graph.built.graph, graph.timeline, options, sink);
  return out;
}

}  // namespace moeplan::interop
