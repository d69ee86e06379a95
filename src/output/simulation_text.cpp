#include <fmt/format.h>

#include <moeplan/output/simulation_report.hpp>

namespace moeplan::output {
namespace {

// How much longer `ms` is than `reference`, in percent (0 for an empty reference).
double percent_over(double ms, double reference) { return reference > 0 ? 100 * (ms / reference - 1) : 0.0; }

}  // namespace

std::string simulation_to_text(const plan::ScenarioRun& run, const plan::Simulation& sim) {
  if (sim.mapping) {
    const plan::MappingResult& r = *sim.mapping;
    return fmt::format("{}: {:.1f} ms per iteration, MFU {:.1f}%, {:.1f} GiB per GPU{}\n", run.spec().name,
                       r.iteration_ms, 100 * r.mfu, r.memory_bytes_per_gpu / (1024.0 * 1024 * 1024),
                       r.fits ? "" : " (does not fit)");
  }
  std::string out;
  for (const plan::SimulatedSchedule& r : sim.schedules) {
    const plan::Evaluation& e = r.evaluation;
    out += fmt::format(
        "{:<14} d={:<3} iteration {:9.3f} ms  forward {:9.3f}  backward {:9.3f}  exposed comm "
        "{:8.3f}  bubbles {:8.3f}  tasks {}\n",
        e.schedule, e.degree, e.iteration_ms, e.forward_ms, e.backward_ms, e.exposed_comm_ms, e.bubble_ms, e.tasks);
    if (const auto& n = r.noise)
      out += fmt::format(
          "{:<14} noise cv {:g} over {} seeds: mean {:.3f} ms ({:+.1f}%), p95 {:.3f} ms ({:+.1f}%), range {:.3f}..{:.3f}\n",
          "", n->compute_jitter_cv, n->seeds, n->mean_ms, percent_over(n->mean_ms, e.iteration_ms), n->p95_ms,
          percent_over(n->p95_ms, e.iteration_ms), n->min_ms, n->max_ms);
    if (e.routing) {
      const plan::RoutingReport& routed = *e.routing;
      const std::size_t slowest = static_cast<std::size_t>(routed.slowest_rank);
      out += fmt::format(
          "  routing {}: {:.2f}% of token slots dropped; slowest rank {} (its AlltoAlls {:.3f} ms of {} ranks drawn)\n"
          "  priced: {}\n",
          routed.routing, 100 * routed.dropped_token_fraction, routed.slowest_rank,
          slowest < routed.per_rank_a2a_ms.size() ? routed.per_rank_a2a_ms[slowest] : 0.0,
          routed.per_rank_a2a_ms.size(), routed.priced);
    }
  }
  return out;
}

}  // namespace moeplan::output
