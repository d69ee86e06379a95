#include <moeplan/output/sweep_report.hpp>

#include <moeplan/plan/result_json.hpp>

#include "sweep_cells.hpp"

namespace moeplan::output {

io::Json sweep_rows_to_json(const io::LoadedSweep& sweep, const std::vector<plan::SweepRow>& rows) {
  io::Json out = io::Json::array();
  for (const plan::SweepRow& r : rows) {
    const plan::Evaluation& e = r.evaluation;
    io::Json j = io::Json::object();
    j.set("point", static_cast<std::int64_t>(r.point));
    j.set("scenario", r.scenario);
    // Axis values as the sweep writes them (text), as the CSV's cells.
    for (std::size_t c = 0; c < sweep.columns.size() && c < r.labels.size(); ++c) j.set(sweep.columns[c], r.labels[c]);
    // Non-finite numbers are written null (io::Json), as the CSV leaves their cells empty.
    plan::set_evaluation_times(j, e);
    j.set("speedup_vs_none", r.speedup_vs_none);
    j.set("speedup_vs_tutel", r.speedup_vs_tutel);
    j.set("grad_partition_bytes", partition_bytes(r.knobs));
    j.set("degree_forward", degree_forward(r));
    j.set("degree_backward", degree_backward(r));
    j.set("ar_chunk_bytes", r.knobs.ar_chunk_bytes.value_or(0));
    j.set("mapping", sweep_mapping_cell(r.knobs));
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

}  // namespace moeplan::output
