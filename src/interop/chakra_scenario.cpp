// A scenario (or plan) to a Chakra trace: the graph `simulate` builds and runs
// for it, exported with its timeline.

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/interop/chakra.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::interop {

ScenarioChakraExport export_scenario_chakra(const plan::ScenarioRun& run, const std::string& schedule,
                                            std::optional<std::int64_t> degree) {
  const model::ScenarioSpec& spec = run.spec();
  // A trace holds one graph; noise would need one per seed, and which one would be arbitrary.
  if (spec.schedule.compute_jitter_cv > 0)
    throw Error(ErrorKind::Input,
                "export-chakra writes the noiseless graph; a trace has no noise model (`moeplan simulate` reports the "
                "mean and p95 under noise)",
                "schedule.compute_jitter_cv");
  ScenarioChakraExport out;
  ChakraExportOptions options;
  options.scenario = spec.name;
  if (spec.schedule.family == "folding") {
    if (!schedule.empty())
      throw Error(ErrorKind::Input,
                  "--schedule: a folding scenario has no overlap schedule; its pipeline follows "
                  "parallelism.pp and parallelism.vpp");
    if (degree) throw Error(ErrorKind::Input, "--degree: a folding scenario's pipeline degree is parallelism.pp");
    plan::FoldingTrace trace;
    run.price_own_mapping(&trace);
    options.schedule = out.schedule = trace.built.schedule;
    // The pipeline graph's ranks are its stages, each standing for its stage's GPUs.
    options.representative = true;
    out.notes.push_back(fmt::format(
        "{}'s pipeline graph has one rank per pipeline stage ({}): file s stands for every GPU of stage s, and its "
        "chunk and optimizer nodes for the work and collectives folding prices per stage",
        spec.name, spec.parallel.pp));
    out.iteration_ms = trace.timeline.makespan_ms;
    out.trace = export_chakra(trace.built.graph, trace.timeline, options);
    return out;
  }
  const std::string requested = schedule.empty() ? spec.schedule.name : schedule;
  if (requested == "all")
    throw Error(ErrorKind::Input, "--schedule: a trace holds one schedule; name one (export each to its own folder)");
  const std::vector<std::string> names = run.runnable_schedules(requested);
  MOEPLAN_CHECK(names.size() == 1, "one named schedule runs or is refused");
  const sched::BuiltSchedule built = run.build(names.front(), degree);
  const sim::Timeline timeline = plan::run_schedule(built);
  options.schedule = out.schedule = built.schedule;
  options.representative = !spec.schedule.multi_rank;
  options.rank_compute_slowdown = built.rank_compute_slowdown;
  if (options.representative)
    out.notes.push_back(fmt::format(
        "{} runs in symmetric mode: only rank 0, which stands for every rank, is in the graph and in the trace "
        "(--set schedule.mode=multi_rank exports every rank)",
        spec.name));
  out.iteration_ms = timeline.makespan_ms;
  out.trace = export_chakra(built.graph, timeline, options);
  return out;
}

}  // namespace moeplan::interop
