#include <moeplan/output/capacity_report.hpp>

#include <fmt/format.h>

#include <moeplan/io/csv_cells.hpp>

#include "capacity_cells.hpp"

namespace moeplan::output {
namespace {

using io::csv_text_cell;

std::string capacity_number_cell(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : std::string(); }

}  // namespace

std::string capacity_to_csv(const plan::CapacityResult& result) {
  std::string out =
      "gpus,mapping,dp,edp,overlap,precision,recompute,iteration_ms,tokens_per_s,mfu,memory_bytes_per_gpu,"
      "memory_tight,days,gpu_hours,cost,meets_deadline,bound_by,mark,bound_detail\n";
  for (const plan::CapacityRow& row : result.rows) {
    const std::optional<plan::CapacityPlan>& p = row.plan;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", row.gpus,
                       p ? capacity_mapping_cell(p->mapping) : "", p ? fmt::format("{}", p->mapping.dp) : "",
                       p ? fmt::format("{}", p->mapping.edp) : "", p ? csv_text_cell(overlap_cell(*p)) : "",
                       p ? csv_text_cell(p->precision) : "", p ? csv_text_cell(p->recompute) : "",
                       p ? fmt::format("{}", p->iteration_ms) : "",
                       capacity_number_cell(row.tokens_per_s), p ? fmt::format("{}", p->mfu) : "",
                       p ? fmt::format("{}", p->memory_bytes_per_gpu) : "",
                       p ? (p->memory_tight ? "true" : "false") : "", capacity_number_cell(row.days),
                       capacity_number_cell(row.gpu_hours), capacity_number_cell(row.cost),
                       row.meets_deadline ? (*row.meets_deadline ? "true" : "false") : "", csv_text_cell(row.bound_by),
                       mark(result, row.gpus), csv_text_cell(row.bound_detail));
  }
  return out;
}

}  // namespace moeplan::output
