#include <moeplan/output/sweep_csv.hpp>

#include <cmath>

#include <fmt/format.h>

#include <moeplan/io/csv_cells.hpp>

#include "sweep_cells.hpp"

namespace moeplan::output {
namespace {

using io::csv_text_cell;

// A number cell; empty where the number is not finite (no baseline row, a
// zero-length iteration), so that no reader meets "nan" or "inf".
std::string sweep_number_cell(double value) { return std::isfinite(value) ? fmt::format("{}", value) : std::string(); }

}  // namespace

std::string sweep_csv_header(const io::LoadedSweep& sweep) {
  std::string csv = "point,scenario";
  for (const std::string& column : sweep.columns) csv += "," + csv_text_cell(column);
  return csv +
         ",schedule,degree,iteration_ms,forward_ms,backward_ms,compute_ms,comm_ms,exposed_comm_ms,bubble_ms,tasks,"
         "speedup_vs_none,speedup_vs_tutel,grad_partition_bytes,degree_forward,degree_backward,ar_chunk_bytes,"
         "mapping\n";
}

std::string sweep_csv_rows(const std::vector<plan::SweepRow>& rows) {
  std::string out;
  for (const plan::SweepRow& r : rows) {
    const plan::Evaluation& e = r.evaluation;
    out += fmt::format("{},{}", r.point, csv_text_cell(r.scenario));
    for (const std::string& label : r.labels) out += "," + csv_text_cell(label);
    out += fmt::format(",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_text_cell(e.schedule), e.degree,
                       sweep_number_cell(e.iteration_ms), sweep_number_cell(e.forward_ms), sweep_number_cell(e.backward_ms),
                       sweep_number_cell(e.compute_ms), sweep_number_cell(e.comm_ms), sweep_number_cell(e.exposed_comm_ms),
                       sweep_number_cell(e.bubble_ms), e.tasks, sweep_number_cell(r.speedup_vs_none),
                       sweep_number_cell(r.speedup_vs_tutel), sweep_number_cell(partition_bytes(r.knobs)),
                       degree_forward(r), degree_backward(r), r.knobs.ar_chunk_bytes.value_or(0),
                       csv_text_cell(sweep_mapping_cell(r.knobs)));
  }
  return out;
}

}  // namespace moeplan::output
