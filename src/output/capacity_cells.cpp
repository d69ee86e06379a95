#include "capacity_cells.hpp"

#include <fmt/format.h>

#include <moeplan/plan/joint.hpp>

namespace moeplan::output {

std::string capacity_mapping_cell(const cost::MappingConfig& c) {
  return fmt::format("tp{}-cp{}-pp{}-vpp{}-ep{}-etp{}-mb{}", c.tp, c.cp, c.pp, c.vpp, c.ep, c.etp, c.micro_batch);
}

std::string overlap_cell(const plan::CapacityPlan& p) {
  const std::size_t slash = p.overlap.find('/');
  if (slash == std::string::npos) return p.overlap;  // no overlap
  const plan::OverlapSchedule overlap{p.overlap.substr(0, slash), p.overlap.substr(slash + 1), p.degree_forward};
  return fmt::format("{} {}", p.overlap, plan::overlap_degree_text(overlap, p.degree_forward, p.degree_backward));
}

std::string mark(const plan::CapacityResult& r, std::int64_t gpus) {
  const bool smallest = r.smallest_gpus == gpus, cheapest = r.cost_optimal_gpus == gpus;
  return smallest && cheapest ? "smallest;cost-optimal" : smallest ? "smallest" : cheapest ? "cost-optimal" : "";
}

}  // namespace moeplan::output
