// The SVG Gantt chart of a simulated timeline (issue 18 item 3): what a
// person looks at without a trace viewer, so it says what it shows: a title,
// an axis in ms at round ticks, where forward ends, and only the operation
// classes that appear.

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include <moeplan/output/timeline_layout.hpp>
#include <moeplan/output/timeline_writer.hpp>

namespace moeplan::output {
namespace {

constexpr double kLabelWidth = 170, kPlotWidth = 1100, kRightMargin = 20;
constexpr double kTitleY = 20, kTop = 46;
// Lanes: one per resource (22 px), or per stage with its compute stream as a
// full row and its other streams as thin rows below.
constexpr double kLaneHeight = 22, kStageRow = 18, kStageThinRow = 9, kStageGap = 8;
constexpr double kAxisGap = 4, kLegendGap = 44, kLegendItemWidth = 130;
// Task names are drawn inside a rectangle that fits them at this width per character (9 px sans-serif).
constexpr double kCharWidth = 5.5, kTextPadding = 3;
// Backward tasks of interleaved phases: the op colour at this opacity.
constexpr double kBackwardOpacity = 0.55;

// White text on dark colours, black on light ones (ITU-R BT.601 luma of the "#RRGGBB" colour).
const char* text_colour(const char* hex) {
  const long rgb = std::strtol(hex + 1, nullptr, 16);
  const double luma = 0.299 * static_cast<double>((rgb >> 16) & 0xff) + 0.587 * static_cast<double>((rgb >> 8) & 0xff) +
                      0.114 * static_cast<double>(rgb & 0xff);
  return luma < 140 ? "#fff" : "#000";
}

// Where each drawn resource's row is: its top and height, and the lanes' labels.
struct Rows {
  std::vector<double> top, height;  // per resource (unused when not drawn)
  double bottom = kTop;             // below the last lane
  std::string labels;               // SVG text of the lane labels and backgrounds
};

Rows lay_out(const dag::TaskGraph& g, const std::vector<bool>& shown, bool stage_lanes) {
  Rows rows;
  rows.top.assign(g.resources().size(), 0);
  rows.height.assign(g.resources().size(), 0);
  double y = kTop;
  auto background = [&](double top, double height) {
    rows.labels += fmt::format("<rect x=\"{}\" y=\"{:.2f}\" width=\"{}\" height=\"{}\" fill=\"#eeeeee\"/>\n",
                               kLabelWidth, top, kPlotWidth, height);
  };
  if (!stage_lanes) {
    for (std::size_t i = 0; i < shown.size(); ++i) {
      if (!shown[i]) continue;
      const dag::Resource& r = g.resources()[i];
      rows.top[i] = y + 2;
      rows.height[i] = kLaneHeight - 4;
      rows.labels += fmt::format("<text x=\"4\" y=\"{:.2f}\">{}</text>\n", y + 15,
                                 xml_escape(fmt::format("rank {} {}", r.rank, r.name)));
      background(rows.top[i], rows.height[i]);
      y += kLaneHeight;
    }
    rows.bottom = y;
    return rows;
  }
  // Stage lanes: the ranks in order, each rank's streams in resource order (compute first in a pipeline).
  std::map<std::int32_t, std::vector<std::size_t>> by_rank;
  for (std::size_t i = 0; i < shown.size(); ++i)
    if (shown[i]) by_rank[g.resources()[i].rank].push_back(i);
  for (const auto& [rank, resources] : by_rank) {
    const double lane_top = y;
    for (std::size_t i : resources) {
      const bool compute = g.resources()[i].name == "compute";
      rows.top[i] = y;
      rows.height[i] = compute ? kStageRow : kStageThinRow;
      background(y, rows.height[i]);
      rows.labels += fmt::format("<text x=\"{}\" y=\"{:.2f}\" font-size=\"8\" text-anchor=\"end\" fill=\"#555\">{}</text>\n",
                                 kLabelWidth - 4, y + rows.height[i] - 1.5, xml_escape(g.resources()[i].name));
      y += rows.height[i] + 1;
    }
    rows.labels += fmt::format("<text x=\"4\" y=\"{:.2f}\" font-weight=\"bold\">{}</text>\n", lane_top + 13,
                               xml_escape(fmt::format("stage {}", rank)));
    y += kStageGap;
  }
  rows.bottom = y;
  return rows;
}

}  // namespace

std::string SvgGanttWriter::write(const dag::TaskGraph& g, const sim::Timeline& tl) const {
  const std::vector<bool> shown = shown_resources(g);
  const Rows rows = lay_out(g, shown, stage_lanes_);
  const double makespan = tl.makespan_ms > 0 ? tl.makespan_ms : 1.0;
  const double scale = kPlotWidth / makespan;
  const std::optional<double> divider = phase_divider_ms(g, tl, shown);
  const std::vector<model::OpClass> ops = ops_present(g, shown);
  bool backward_drawn = false;
  for (dag::TaskId t = 0; t < g.size() && !backward_drawn; ++t) {
    const auto resources = g.resources(t);
    backward_drawn = g.phase(t) == dag::Phase::Backward &&
                     std::any_of(resources.begin(), resources.end(), [&](dag::ResourceId r) { return shown[r]; });
  }
  const bool lighter_backward = !divider && backward_drawn;
  const double axis_y = rows.bottom + kAxisGap;
  const double legend_y = axis_y + kLegendGap;
  const double height = legend_y + 24;
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{:.0f}\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n",
      kLabelWidth + kPlotWidth + kRightMargin, height);
  const std::string title =
      scenario_.empty() ? fmt::format("iteration {:.3f} ms", tl.makespan_ms)
                        : fmt::format("{} \u00b7 {} \u00b7 iteration {:.3f} ms", scenario_, schedule_, tl.makespan_ms);
  out += fmt::format("<text class=\"title\" x=\"4\" y=\"{}\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                     kTitleY, xml_escape(title));
  out += rows.labels;
  // Grid lines and tick labels at round times (ms).
  for (const AxisTick& tick : axis_ticks(0, makespan, 10)) {
    const double x = kLabelWidth + tick.value * scale;
    out += fmt::format("<line class=\"tick\" x1=\"{:.2f}\" y1=\"{}\" x2=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"#ccc\"/>\n", x,
                       kTop - 4, x, axis_y + 4);
    out += fmt::format("<text class=\"tick-label\" x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"middle\">{}</text>\n", x,
                       axis_y + 16, tick.label);
  }
  out += fmt::format("<line x1=\"{}\" y1=\"{:.2f}\" x2=\"{}\" y2=\"{:.2f}\" stroke=\"#333\"/>\n", kLabelWidth, axis_y,
                     kLabelWidth + kPlotWidth, axis_y);
  out += fmt::format("<text x=\"{}\" y=\"{:.2f}\" text-anchor=\"end\">time (ms)</text>\n", kLabelWidth - 12, axis_y + 16);
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    const double x = kLabelWidth + tl.start_ms[t] * scale;
    const double w = std::max(0.5, (tl.end_ms[t] - tl.start_ms[t]) * scale);
    const char* fill = op_colour(g.op(t));
    const bool light = lighter_backward && g.phase(t) == dag::Phase::Backward;
    const std::string name(g.name(t));
    for (dag::ResourceId res : g.resources(t)) {
      if (!shown[res]) continue;
      out += fmt::format(
          "<rect x=\"{:.3f}\" y=\"{:.2f}\" width=\"{:.3f}\" height=\"{}\" fill=\"{}\"{} stroke=\"#333\" "
          "stroke-width=\"0.3\"><title>{}</title></rect>\n",
          x, rows.top[res], w, rows.height[res], fill, light ? fmt::format(" fill-opacity=\"{}\"", kBackwardOpacity) : "",
          xml_escape(fmt::format("{} [{} {} {} group {} mb {} layer {} {}] {:.4g}-{:.4g} ms", name,
                                 model::to_string(g.op(t)), g.size(t),
                                 g.kind(t) == dag::TaskKind::Compute ? "FLOPs" : "bytes", g.group_size(t),
                                 g.micro_batch(t), g.layer(t), dag::to_string(g.phase(t)), tl.start_ms[t],
                                 tl.end_ms[t])));
      if (rows.height[res] >= kStageRow - 4 && w >= static_cast<double>(name.size()) * kCharWidth + 2 * kTextPadding)
        out += fmt::format("<text x=\"{:.3f}\" y=\"{:.2f}\" font-size=\"9\" fill=\"{}\">{}</text>\n", x + kTextPadding,
                           rows.top[res] + rows.height[res] / 2 + 3, light ? "#000" : text_colour(fill),
                           xml_escape(name));
    }
  }
  // The forward pass ends here when the phases do not interleave.
  if (divider) {
    const double x = kLabelWidth + *divider * scale;
    out += fmt::format(
        "<line class=\"phase-divider\" data-ms=\"{}\" x1=\"{:.2f}\" y1=\"{}\" x2=\"{:.2f}\" y2=\"{:.2f}\" "
        "stroke=\"#000\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
        *divider, x, kTop - 14, x, axis_y);
    out += fmt::format("<text x=\"{:.2f}\" y=\"{}\" text-anchor=\"end\">forward \u2190</text>\n", x - 4, kTop - 6);
    out += fmt::format("<text x=\"{:.2f}\" y=\"{}\">\u2192 backward</text>\n", x + 4, kTop - 6);
  }
  // Legend: the operation classes drawn, and the lighter shade when it is used.
  double x = kLabelWidth;
  for (model::OpClass op : ops) {
    out += fmt::format(
        "<g class=\"legend-item\" data-op=\"{}\"><rect x=\"{}\" y=\"{:.2f}\" width=\"12\" height=\"12\" "
        "fill=\"{}\"/><text x=\"{}\" y=\"{:.2f}\">{}</text></g>\n",
        model::to_string(op), x, legend_y, op_colour(op), x + 16, legend_y + 10, model::to_string(op));
    x += kLegendItemWidth;
  }
  if (lighter_backward)
    out += fmt::format(
        "<g class=\"legend-item\" data-phase=\"backward\"><rect x=\"{}\" y=\"{:.2f}\" width=\"12\" height=\"12\" "
        "fill=\"#555\" fill-opacity=\"{}\"/><text x=\"{}\" y=\"{:.2f}\">lighter: backward</text></g>\n",
        x, legend_y, kBackwardOpacity, x + 16, legend_y + 10);
  out += "</svg>\n";
  return out;
}

}  // namespace moeplan::output
