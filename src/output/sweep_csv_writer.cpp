#include <moeplan/output/sweep_csv.hpp>

#include <fmt/format.h>

#include <moeplan/output/sweep_report.hpp>

#include <cmath>

namespace moeplan::output {
namespace {

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A number cell; empty where the number is not finite (no baseline row, a
// zero-length iteration), so that no reader meets "nan" or "inf".
std::string number_cell(double value) { return std::isfinite(value) ? fmt::format("{}", value) : std::string(); }

// "tp1-cp4-pp8-vpp1-ep8-etp1-mb1", or empty.
std::string mapping_cell(const model::PlanKnobs& k) {
  if (!k.parallelism) return "";
  const model::ParallelSpec& p = *k.parallelism;
  return fmt::format("tp{}-cp{}-pp{}-vpp{}-ep{}-etp{}-mb{}", p.tp, p.cp, p.pp, p.vpp, p.ep, p.etp,
                     k.micro_batch_size.value_or(0));
}


// The knob columns of a row, from the knobs its planner chose: the gradient
// bytes all-reduced while layers run (FSMoE's partition, whole bytes per
// layer, summed); the degree of each phase (FSMoE's, else the schedule's one
// degree: FoldMoE d, FlowMoE R, a mapping's pp).
double partition_bytes(const model::PlanKnobs& k) {
  double sum = 0;
  for (std::int64_t b : k.grad_partition_bytes) sum += static_cast<double>(b);
  return sum;
}
std::int64_t degree_forward(const plan::SweepRow& r) { return r.knobs.degree_forward.value_or(r.evaluation.degree); }
std::int64_t degree_backward(const plan::SweepRow& r) { return r.knobs.degree_backward.value_or(r.evaluation.degree); }

}  // namespace

std::string sweep_csv_header(const io::LoadedSweep& sweep) {
  std::string csv = "point,scenario";
  for (const std::string& column : sweep.columns) csv += "," + csv_cell(column);
  return csv +
         ",schedule,degree,iteration_ms,forward_ms,backward_ms,compute_ms,comm_ms,exposed_comm_ms,bubble_ms,tasks,"
         "speedup_vs_none,speedup_vs_tutel,grad_partition_bytes,degree_forward,degree_backward,ar_chunk_bytes,"
         "mapping\n";
}

std::string sweep_csv_rows(const std::vector<plan::SweepRow>& rows) {
  std::string out;
  for (const plan::SweepRow& r : rows) {
    const plan::Evaluation& e = r.evaluation;
    out += fmt::format("{},{}", r.point, csv_cell(r.scenario));
    for (const std::string& label : r.labels) out += "," + csv_cell(label);
    out += fmt::format(",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_cell(e.schedule), e.degree,
                       number_cell(e.iteration_ms), number_cell(e.forward_ms), number_cell(e.backward_ms),
                       number_cell(e.compute_ms), number_cell(e.comm_ms), number_cell(e.exposed_comm_ms),
                       number_cell(e.bubble_ms), e.tasks, number_cell(r.speedup_vs_none),
                       number_cell(r.speedup_vs_tutel), number_cell(partition_bytes(r.knobs)),
                       degree_forward(r), degree_backward(r), r.knobs.ar_chunk_bytes.value_or(0),
                       csv_cell(mapping_cell(r.knobs)));
  }
  return out;
}

io::Json sweep_rows_to_json(const io::LoadedSweep& sweep, const std::vector<plan::SweepRow>& rows) {
  io::Json out = io::Json::array();
  for (const plan::SweepRow& r : rows) {
    const plan::Evaluation& e = r.evaluation;
    io::Json j = io::Json::object();
    j.set("point", static_cast<std::int64_t>(r.point));
    j.set("scenario", r.scenario);
    // Axis values as the sweep writes them (text), as the CSV's cells.
    for (std::size_t c = 0; c < sweep.columns.size() && c < r.labels.size(); ++c) j.set(sweep.columns[c], r.labels[c]);
    j.set("schedule", e.schedule);
    j.set("degree", e.degree);
    // Non-finite numbers are written null (io::Json), as the CSV leaves their cells empty.
    j.set("iteration_ms", e.iteration_ms);
    j.set("forward_ms", e.forward_ms);
    j.set("backward_ms", e.backward_ms);
    j.set("compute_ms", e.compute_ms);
    j.set("comm_ms", e.comm_ms);
    j.set("exposed_comm_ms", e.exposed_comm_ms);
    j.set("bubble_ms", e.bubble_ms);
    j.set("tasks", e.tasks);
    j.set("speedup_vs_none", r.speedup_vs_none);
    j.set("speedup_vs_tutel", r.speedup_vs_tutel);
    j.set("grad_partition_bytes", partition_bytes(r.knobs));
    j.set("degree_forward", degree_forward(r));
    j.set("degree_backward", degree_backward(r));
    j.set("ar_chunk_bytes", r.knobs.ar_chunk_bytes.value_or(0));
    j.set("mapping", mapping_cell(r.knobs));
    out.push(std::move(j));
  }
  return out;
}

io::Json sweep_summary_to_json(const plan::SweepSummary& summary_in) {
  io::Json summary = io::Json::array();
  for (const plan::SweepSummary::Entry& e : summary_in.entries()) {
    io::Json entry = io::Json::object();
    entry.set("schedule", e.schedule);
    entry.set("points", static_cast<std::int64_t>(e.points));
    entry.set("mean_speedup_vs_none", e.mean_speedup_vs_none);  // null where no point had a baseline
    entry.set("geomean_speedup_vs_none", e.geomean_speedup_vs_none);
    entry.set("mean_speedup_vs_tutel", e.mean_speedup_vs_tutel);
    summary.push(std::move(entry));
  }
  return summary;
}

std::string sweep_summary_to_text(const std::string& sweep, std::size_t points, const plan::SweepSummary& summary,
                                  const std::string& ran_on, double wall_s) {
  const std::vector<plan::SweepSummary::Entry> entries = summary.entries();
  std::string out = fmt::format("sweep {}: {} points x {} schedules on {} in {:.2f} s\n", sweep, points,
                                entries.size(), ran_on, wall_s);
  auto ratio_text = [](double value) { return std::isfinite(value) ? fmt::format("{:.3f}x", value) : "n/a"; };
  for (const plan::SweepSummary::Entry& e : entries)
    out += fmt::format("  {:<14} mean speed-up {} vs none (geomean {}), {} vs tutel\n", e.schedule,
                       ratio_text(e.mean_speedup_vs_none), ratio_text(e.geomean_speedup_vs_none),
                       ratio_text(e.mean_speedup_vs_tutel));
  return out;
}

}  // namespace moeplan::output
