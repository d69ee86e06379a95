#include <moeplan/output/simulation_report.hpp>

#include <moeplan/plan/result_json.hpp>

namespace moeplan::output {
namespace {

io::Json mapping_simulation_to_json(const std::string& scenario, const plan::MappingResult& r,
                                    const plan::MappingTrace& trace) {
  io::Json j = io::Json::object();
  j.set("scenario", scenario);
  j.set("schedule", trace.built.schedule);
  j.set("degree", r.config.pp);
  j.set("iteration_ms", r.iteration_ms);
  j.set("mfu", r.mfu);
  j.set("memory_bytes_per_gpu", r.memory_bytes_per_gpu);
  j.set("fits", r.fits);
  j.set("bubble_ms", r.breakdown.pp_bubble_ms);
  j.set("tasks", static_cast<std::int64_t>(trace.built.graph.size()));
  return j;
}

}  // namespace

io::Json noise_to_json(const plan::NoiseSummary& n, double noiseless_ms) {
  io::Json j = io::Json::object();
  j.set("compute_jitter_cv", n.compute_jitter_cv);
  j.set("seeds", n.seeds);
  j.set("iteration_ms_mean", n.mean_ms);
  j.set("iteration_ms_p95", n.p95_ms);
  j.set("iteration_ms_min", n.min_ms);
  j.set("iteration_ms_max", n.max_ms);
  if (noiseless_ms > 0) {  // an empty iteration has no slowdown to report
    j.set("mean_slowdown", n.mean_ms / noiseless_ms);
    j.set("p95_slowdown", n.p95_ms / noiseless_ms);
  }
  return j;
}

io::Json simulation_to_json(const plan::ScenarioRun& run, const plan::Simulation& sim) {
  if (sim.mapping) return mapping_simulation_to_json(run.spec().name, *sim.mapping, *sim.mapping_trace);
  // The scenario's mapping against its GPU's memory (docs/cost-model.md, "Memory").
  const double memory = run.memory_bytes_per_gpu();
  const bool fits = run.fits_in_memory();
  io::Json::Array list;
  for (const plan::SimulatedSchedule& r : sim.schedules) {
    io::Json entry = plan::evaluation_to_json(run.spec().name, r.evaluation);
    entry.set("memory_bytes_per_gpu", memory);
    entry.set("fits", fits);
    if (r.noise) entry.set("noise", noise_to_json(*r.noise, r.evaluation.iteration_ms));
    list.push_back(std::move(entry));
  }
  if (!sim.all && !list.empty()) return list.front();
  return io::Json(std::move(list));
}

}  // namespace moeplan::output
