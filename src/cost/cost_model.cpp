#include <moeplan/cost/cost_model.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/bus_factor.hpp>

namespace moeplan::cost {
namespace {
std::size_t index(model::OpClass op) { return static_cast<std::size_t>(op); }
std::size_t index(model::LinkClass link) { return static_cast<std::size_t>(link); }
}  // namespace

CostModel::CostModel(const model::CostProfileSpec& profile)
    : profile_name_(profile.name), overlap_compute_slowdown_(profile.overlap_compute_slowdown) {
  for (const model::LinearCostSpec& line : profile.costs) lines_[index(line.op)][index(line.link)].push_back(line);
  for (auto& per_op : lines_)
    for (auto& per_link : per_op)
      std::sort(per_link.begin(), per_link.end(),
                [](const model::LinearCostSpec& a, const model::LinearCostSpec& b) { return a.group < b.group; });
}

bool CostModel::has(model::OpClass op, model::LinkClass link) const { return !lines_[index(op)][index(link)].empty(); }

const model::LinearCostSpec& CostModel::nearest(model::OpClass op, model::LinkClass link, std::int64_t group) const {
  const std::vector<model::LinearCostSpec>& candidates = lines_[index(op)][index(link)];
  if (candidates.empty())
    throw Error(ErrorKind::Input,
                fmt::format("profile '{}' has no {} line on link {}", profile_name_, model::to_string(op),
                            model::to_string(link)),
                "costs");
  // Nearest measured group on a log scale; ties go to the smaller group.
  const model::LinearCostSpec* best = &candidates.front();
  double best_distance = std::abs(std::log(static_cast<double>(group) / static_cast<double>(best->group)));
  for (const model::LinearCostSpec& c : candidates) {
    if (c.group == group) return c;
    const double distance = std::abs(std::log(static_cast<double>(group) / static_cast<double>(c.group)));
    if (distance < best_distance) {
      best = &c;
      best_distance = distance;
    }
  }
  return *best;
}

std::int64_t CostModel::measured_group(model::OpClass op, model::LinkClass link, std::int64_t group) const {
  return nearest(op, link, group).group;
}

LinearModel CostModel::line_for(model::OpClass op, model::LinkClass link, std::int64_t group) const {
  const model::LinearCostSpec& measured = nearest(op, link, group);
  LinearModel line{measured.alpha_ms, measured.beta_ms_per_unit};
  if (measured.group != group && is_communication(op) && measured.group > 1) {
    // Same bus bandwidth, different group: only the slope moves. Startup
    // latency is kept (a simplification; docs/cost-model.md).
    line.beta_ms_per_unit *= bus_factor(op, group) / bus_factor(op, measured.group);
  }
  return line;
}

Milliseconds CostModel::compute(model::OpClass op, double flops) const {
  MOEPLAN_CHECK(!is_communication(op), "compute() called with a communication op");
  return Milliseconds{line_for(op, model::LinkClass::Local, 1).predict_ms(flops)};
}

Milliseconds CostModel::communication(model::OpClass op, model::LinkClass link, std::int64_t group,
                                      double size_bytes) const {
  MOEPLAN_CHECK(is_communication(op), "communication() called with a compute op");
  if (group <= 1 && op != model::OpClass::P2P) return Milliseconds{0.0};
  return Milliseconds{line_for(op, link, group).predict_ms(size_bytes)};
}

Milliseconds CostModel::predict(model::OpClass op, model::LinkClass link, std::int64_t group, double size) const {
  return is_communication(op) ? communication(op, link, group, size) : compute(op, size);
}

Milliseconds expert_ffn_time(const CostModel& costs, double flops, int gemms) {
  MOEPLAN_CHECK(gemms > 0, "an expert has at least one GEMM");
  return Milliseconds{static_cast<double>(gemms) *
                      costs.compute(model::OpClass::Gemm, flops / static_cast<double>(gemms)).value};
}

model::LinkClass link_class_of(const std::vector<std::int64_t>& ranks, std::int64_t gpus_per_node) {
  MOEPLAN_CHECK(gpus_per_node > 0, "gpus_per_node must be positive");
  if (ranks.empty()) return model::LinkClass::Intra;
  const std::int64_t node = ranks.front() / gpus_per_node;
  for (std::int64_t r : ranks)
    if (r / gpus_per_node != node) return model::LinkClass::Inter;
  return model::LinkClass::Intra;
}

}  // namespace moeplan::cost
