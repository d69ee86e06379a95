#include <moeplan/output/timeline_layout.hpp>

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::output {
namespace {

// One colour per operation class (order of model::OpClass), colour-blind safe (Okabe-Ito).
// Okabe-Ito's colour-blind-safe palette, one per OpClass in its order (the
// eighth, black, for gemm_fp8; grey for elementwise).
constexpr std::array<const char*, model::kOpClassCount> kOpColours = {
    "#0072B2", "#56B4E9", "#D55E00", "#E69F00", "#CC79A7", "#009E73", "#F0E442", "#000000", "#999999"};

// Slack for a tick that lies on the range's end but lands a rounding error outside it.
constexpr double kTickSlack = 1e-9;

// The step as mantissa (1, 2, 5) x 10^exponent, so that ticks and labels come
// from integers: i x mantissa / 10^-exponent is the correctly rounded tick.
struct Step {
  double mantissa = 1;
  int exponent = 0;
  double value() const {
    return exponent >= 0 ? mantissa * std::pow(10.0, exponent) : mantissa / std::pow(10.0, -exponent);
  }
};

Step choose_step(double lo, double hi, int max_ticks) {
  MOEPLAN_CHECK(std::isfinite(lo) && std::isfinite(hi), "an axis spans finite values");
  const double span = hi > lo ? hi - lo : 1.0;
  const double raw = span / std::max(1, max_ticks);
  // The power of ten p with p <= raw < 10 p, by exact multiplications and divisions of 10.
  int exponent = 0;
  double power = 1;
  while (power * 10 <= raw) {
    power *= 10;
    ++exponent;
  }
  while (power > raw) {
    --exponent;
    power = exponent >= 0 ? std::pow(10.0, exponent) : 1.0 / std::pow(10.0, -exponent);
  }
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw) return {m, exponent};
  return {1.0, exponent + 1};
}

}  // namespace

double axis_tick_step(double lo, double hi, int max_ticks) { return choose_step(lo, hi, max_ticks).value(); }

std::vector<AxisTick> axis_ticks(double lo, double hi, int max_ticks) {
  if (!(hi > lo)) hi = lo + 1;
  const Step step = choose_step(lo, hi, max_ticks);
  const double size = step.value();
  const int decimals = std::max(0, -step.exponent);
  const auto first = static_cast<long long>(std::ceil(lo / size - kTickSlack));
  const auto last = static_cast<long long>(std::floor(hi / size + kTickSlack));
  std::vector<AxisTick> ticks;
  for (long long i = first; i <= last; ++i) {
    const double units = static_cast<double>(i) * step.mantissa;
    double value = step.exponent >= 0 ? units * std::pow(10.0, step.exponent) : units / std::pow(10.0, -step.exponent);
    if (value == 0) value = 0;  // no "-0"
    ticks.push_back({value, fmt::format("{:.{}f}", value, decimals)});
  }
  return ticks;
}

std::optional<double> phase_divider_ms(const dag::TaskGraph& g, const sim::Timeline& tl, const std::vector<bool>& shown) {
  std::optional<double> forward_end, backward_start;
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    const auto resources = g.resources(t);
    if (!shown.empty() && std::none_of(resources.begin(), resources.end(), [&](dag::ResourceId r) { return shown[r]; }))
      continue;
    if (g.phase(t) == dag::Phase::Forward) forward_end = std::max(forward_end.value_or(tl.end_ms[t]), tl.end_ms[t]);
    if (g.phase(t) == dag::Phase::Backward)
      backward_start = std::min(backward_start.value_or(tl.start_ms[t]), tl.start_ms[t]);
  }
  if (!forward_end || !backward_start || *backward_start < *forward_end) return std::nullopt;
  return forward_end;
}

std::vector<model::OpClass> ops_present(const dag::TaskGraph& g, const std::vector<bool>& shown) {
  std::array<bool, kOpColours.size()> seen{};
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    const auto resources = g.resources(t);
    if (shown.empty() || std::any_of(resources.begin(), resources.end(), [&](dag::ResourceId r) { return shown[r]; }))
      seen[static_cast<std::size_t>(g.op(t))] = true;
  }
  std::vector<model::OpClass> out;
  for (std::size_t op = 0; op < seen.size(); ++op)
    if (seen[op]) out.push_back(static_cast<model::OpClass>(op));
  return out;
}

const char* op_colour(model::OpClass op) { return kOpColours[static_cast<std::size_t>(op)]; }

}  // namespace moeplan::output
