#include <moeplan/output/capacity_report.hpp>
#include <moeplan/core/units.hpp>
#include <moeplan/cost/memory.hpp>

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capacity_cells.hpp"

namespace moeplan::output {
namespace {


// 2T, 500B, 1.5M: the largest decimal unit that leaves a number of at least 1.
std::string tokens_text(double tokens) {
  for (auto [unit, scale] : {std::pair{"T", 1e12}, {"B", 1e9}, {"M", 1e6}, {"K", 1e3}})
    if (tokens >= scale) return fmt::format("{:g}{}", tokens / scale, unit);
  return fmt::format("{:g}", tokens);
}

}  // namespace

std::string capacity_to_text(const plan::CapacityRequest& r, const plan::CapacityResult& result) {
  std::string out = fmt::format("capacity: {} on {} ({}), sequence {}, global batch {} sequences", r.model.name,
                                r.cluster.name, r.cluster.gpu.name, r.seq_len, r.global_batch);
  if (r.tokens) out += fmt::format(", {} tokens", tokens_text(*r.tokens));
  if (r.days) out += fmt::format(", deadline {:g} days", *r.days);
  if (r.cost_per_gpu_hour) out += fmt::format(", {:g} per GPU-hour", *r.cost_per_gpu_hour);
  out += '\n';
  // The answer first: the smallest count in time, and the cheapest.
  const plan::CapacityRow* smallest = nullptr;
  const plan::CapacityRow* cheapest = nullptr;
  for (const plan::CapacityRow& row : result.rows) {
    if (result.smallest_gpus == row.gpus) smallest = &row;
    if (result.cost_optimal_gpus == row.gpus) cheapest = &row;
  }
  if (r.days)
    out += smallest != nullptr
               ? fmt::format("  answer: {} GPUs train it in {:.1f} days (deadline {:g})\n", smallest->gpus,
                             *smallest->days, *r.days)
               : fmt::format("  answer: no count searched meets the {:g}-day deadline\n", *r.days);
  if (cheapest != nullptr)
    out += fmt::format("  cost-optimal: {} GPUs ({:.0f} tokens per GPU-second{})\n", cheapest->gpus,
                       *cheapest->tokens_per_s / static_cast<double>(cheapest->gpus),
                       cheapest->gpu_hours ? fmt::format(", {:.0f} GPU-hours", *cheapest->gpu_hours) : "");
  out += fmt::format("  {:>5}  {:<41} {:<24} {:<14} {:<10} {:>10} {:>6} {:>7} {:>7} {:>10} {:>11}  {}\n", "GPUs",
                     "mapping (dp, edp)", "overlap", "precision", "recompute", "tokens/s", "MFU", "GiB/GPU", "days",
                     "GPU-hours", "cost", "bound by");
  for (const plan::CapacityRow& row : result.rows) {
    const std::string marks = mark(result, row.gpus);
    if (!row.plan) {
      out += fmt::format("  {:>5}  no plan: {} ({})\n", row.gpus, row.bound_by, row.bound_detail);
      continue;
    }
    const plan::CapacityPlan& p = *row.plan;
    out += fmt::format("  {:>5}  {:<41} {:<24} {:<14} {:<10} {:>10.0f} {:>5.1f}% {:>7.1f} {:>7} {:>10} {:>11}  {}{}\n",
                       row.gpus, fmt::format("{} ({}, {})", capacity_mapping_cell(p.mapping), p.mapping.dp, p.mapping.edp),
                       overlap_cell(p), p.precision, p.recompute, *row.tokens_per_s, 100 * p.mfu, p.memory_bytes_per_gpu / kGiB,
                       row.days ? fmt::format("{:.1f}", *row.days) : "-",
                       row.gpu_hours ? fmt::format("{:.0f}", *row.gpu_hours) : "-",
                       row.cost ? fmt::format("{:.0f}", *row.cost) : "-", row.bound_by,
                       marks.empty() ? "" : "  <- " + marks);
  }
  // Plans that fit by less than the memory model's error are said (docs/cost-model.md, "Memory").
  std::vector<std::string> tight;
  for (const plan::CapacityRow& row : result.rows)
    if (row.plan && row.plan->memory_tight)
      tight.push_back(std::to_string(row.gpus));
  if (!tight.empty())
    out += fmt::format("  tight: the plans of {} GPUs fit in the {:.1f} GiB usable by less than the memory model's "
                       "largest under-prediction of a measured peak ({:.1f}%): they may not fit\n",
                       fmt::join(tight, ", "), cost::usable_memory_bytes(r.cluster.gpu) / kGiB,
                       100 * cost::MemoryModel{}.largest_underprediction);
  return out;
}

}  // namespace moeplan::output
