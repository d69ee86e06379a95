#include "sweep_cells.hpp"

#include <fmt/format.h>

namespace moeplan::output {

std::string sweep_mapping_cell(const model::PlanKnobs& k) {
  if (!k.parallelism) return "";
  const model::ParallelSpec& p = *k.parallelism;
  return fmt::format("tp{}-cp{}-pp{}-vpp{}-ep{}-etp{}-mb{}", p.tp, p.cp, p.pp, p.vpp, p.ep, p.etp,
                     k.micro_batch_size.value_or(0));
}

double partition_bytes(const model::PlanKnobs& k) {
  double sum = 0;
  for (std::int64_t b : k.grad_partition_bytes) sum += static_cast<double>(b);
  return sum;
}

std::int64_t degree_forward(const plan::SweepRow& r) { return r.knobs.degree_forward.value_or(r.evaluation.degree); }
std::int64_t degree_backward(const plan::SweepRow& r) { return r.knobs.degree_backward.value_or(r.evaluation.degree); }

}  // namespace moeplan::output
