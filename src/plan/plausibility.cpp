#include <moeplan/plan/plausibility.hpp>

#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::plan {
namespace {

[[noreturn]] void implausible(const std::string& what, double value, const char* rule) {
  throw Error(ErrorKind::Runtime, fmt::format("internal error: implausible result: {} = {} ({})", what, value, rule));
}

void check_time(const std::string& what, double ms, double iteration_ms) {
  if (!std::isfinite(ms) || ms < 0) implausible(what, ms, "must be finite and not negative");
  // Summed task times may exceed the makespan by rounding, not more.
  if (ms > iteration_ms * (1 + 1e-9) + 1e-9) implausible(what, ms, "exceeds the iteration time");
}

}  // namespace

void check_plausible(const Evaluation& e) {
  const std::string at = e.schedule.empty() ? "iteration_ms" : e.schedule + " iteration_ms";
  if (!std::isfinite(e.iteration_ms) || e.iteration_ms <= 0) implausible(at, e.iteration_ms, "must be positive and finite");
  check_time(e.schedule + " forward_ms", e.forward_ms, e.iteration_ms);
  check_time(e.schedule + " compute_ms", e.compute_ms, e.iteration_ms);
  check_time(e.schedule + " exposed_comm_ms", e.exposed_comm_ms, e.iteration_ms);
  check_time(e.schedule + " bubble_ms", e.bubble_ms, e.iteration_ms);
  if (!std::isfinite(e.comm_ms) || e.comm_ms < 0) implausible(e.schedule + " comm_ms", e.comm_ms, "must be finite");
}

void check_plausible(const MappingResult& r) {
  if (!std::isfinite(r.iteration_ms) || r.iteration_ms <= 0)
    implausible("folding iteration_ms", r.iteration_ms, "must be positive and finite");
  if (!std::isfinite(r.mfu) || r.mfu <= 0 || r.mfu >= 1) implausible("folding mfu", r.mfu, "must be in (0, 1)");
  if (!std::isfinite(r.memory_bytes_per_gpu) || r.memory_bytes_per_gpu <= 0)
    implausible("folding memory_bytes_per_gpu", r.memory_bytes_per_gpu, "must be positive and finite");
  const MappingBreakdown& b = r.breakdown;
  for (const auto& [name, ms] : {std::pair{"attention_ms", b.attention_ms}, {"moe_compute_ms", b.moe_compute_ms},
                                 {"a2a_ms", b.a2a_ms}, {"agrs_ms", b.agrs_ms}, {"dp_ms", b.dp_ms},
                                 {"pp_bubble_ms", b.pp_bubble_ms}, {"recompute_ms", b.recompute_ms},
                                 {"model_ends_ms", b.model_ends_ms}, {"host_wait_ms", b.host_wait_ms}})
    if (!std::isfinite(ms) || ms < 0) implausible(std::string("folding ") + name, ms, "must be finite and not negative");
}

void check_plausible_speedup(double speedup, const char* what) {
  if (!std::isfinite(speedup) || speedup <= 0) implausible(what, speedup, "a speed-up must be positive and finite");
}

}  // namespace moeplan::plan
