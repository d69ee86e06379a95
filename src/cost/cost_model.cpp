#include <moeplan/cost/cost_model.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/attention_shape.hpp>
#include <moeplan/cost/bus_factor.hpp>
#include <moeplan/cost/workload_sizing.hpp>

namespace moeplan::cost {
namespace {
std::size_t index(model::OpClass op) { return static_cast<std::size_t>(op); }
std::size_t index(model::LinkClass link) { return static_cast<std::size_t>(link); }
}  // namespace

CostModel::CostModel(const model::CostProfileSpec& profile)
    : profile_name_(profile.name),
      overlap_compute_slowdown_(profile.overlap_compute_slowdown),
      overlap_comm_slowdown_(profile.overlap_comm_slowdown),
      gemm_shape_(profile.gemm_shape),
      attention_shape_(profile.attention_shape),
      host_issue_(profile.host_issue) {
  for (const model::LinearCostSpec& line : profile.costs) {
    // Pass- or head-dim-specific attention lines are looked up by attention_line(), not by group.
    if (line.kernel)
      kernel_lines_.push_back(line);
    else if (line.attention_pass || line.head_dim)
      attention_lines_.push_back(line);
    else
      lines_[index(line.op)][index(line.link)].push_back(line);
  }
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
                fmt::format("profile {} has no {} line on link {}", quoted_for_error(profile_name_),
                            model::to_string(op), model::to_string(link)),
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

double nic_share(std::int64_t ranks_per_node, std::int64_t nics_per_node, std::int64_t concurrent_groups) {
  MOEPLAN_CHECK(ranks_per_node >= 1 && nics_per_node >= 1 && concurrent_groups >= 1, "NIC share of an empty group");
  const double driven =
      static_cast<double>(std::min(ranks_per_node, nics_per_node)) / static_cast<double>(nics_per_node);
  return std::min(driven, 1.0 / static_cast<double>(concurrent_groups));
}

namespace {
// Bytes of an AlltoAll buffer that one member sends across nodes per byte of
// buffer, times the members sharing the node's bandwidth: (p - m) / p x m.
// A member sends 1/p of its buffer to each peer, p - m of which are on other nodes.
double a2a_network_load(std::int64_t p, std::int64_t m) {
  return static_cast<double>(p - m) / static_cast<double>(p) * static_cast<double>(m);
}
}  // namespace

LinearModel CostModel::network_line(model::OpClass op, const GroupShape& g) const {
  if (g.link() == model::LinkClass::Intra) return line_for(op, model::LinkClass::Intra, g.size);
  const model::LinearCostSpec& measured = nearest(op, model::LinkClass::Inter, g.size);
  const std::int64_t p0 = measured.group;
  // Unstated placement: a pair sits on two nodes; a larger group fills nodes in rank order.
  const std::int64_t m0 =
      measured.ranks_per_node.value_or(op == model::OpClass::P2P ? 1 : std::min(p0, g.gpus_per_node));
  if (m0 >= p0)
    throw Error(ErrorKind::Input,
                fmt::format("profile {}: the inter-node {} line of group {} would have all its ranks on one "
                            "{}-GPU node; set its ranks_per_node",
                            quoted_for_error(profile_name_), model::to_string(op), p0, g.gpus_per_node),
                "costs");
  // The node's bandwidth the line saw, over the share this group gets (both
  // relative to the node's NICs, docs/cost-model.md "Shared NICs").
  const double share_ratio = nic_share(m0, g.nics_per_node, measured.concurrent_groups) /
                             nic_share(g.ranks_per_node, g.nics_per_node, g.concurrent_groups);
  LinearModel line{measured.alpha_ms, measured.beta_ms_per_unit * share_ratio};
  if (op == model::OpClass::A2A) {
    line.beta_ms_per_unit *= a2a_network_load(g.size, g.ranks_per_node) / a2a_network_load(p0, m0);
  } else if (op != model::OpClass::P2P && p0 > 1) {
    line.beta_ms_per_unit *= bus_factor(op, g.size) / bus_factor(op, p0);
  }
  return line;
}

LinearModel CostModel::node_part_line(const GroupShape& g) const {
  // (m - 1) / p of the buffer goes to the m - 1 peers on this node, over the
  // intra link; the intra AlltoAll line moves (p1 - 1) / p1 of its buffer.
  const model::LinearCostSpec& measured = nearest(model::OpClass::A2A, model::LinkClass::Intra, g.ranks_per_node);
  if (measured.group < 2)
    throw Error(
        ErrorKind::Input,
        fmt::format("profile {}: the intra a2a line needs a group of at least 2", quoted_for_error(profile_name_)),
        "costs");
  const double p1 = static_cast<double>(measured.group);
  const double per_byte_on_link = measured.beta_ms_per_unit * p1 / (p1 - 1.0);
  return {measured.alpha_ms,
          static_cast<double>(g.ranks_per_node - 1) / static_cast<double>(g.size) * per_byte_on_link};
}

CommLines CostModel::lines_for(model::OpClass op, const GroupShape& g) const {
  MOEPLAN_CHECK(is_communication(op), "lines_for() called with a compute op");
  MOEPLAN_CHECK(g.size >= 1 && g.ranks_per_node >= 1 && g.ranks_per_node <= g.size, "malformed group shape");
  CommLines out;
  if (g.size <= 1 && op != model::OpClass::P2P) return out;  // no kernel is launched
  out.main = network_line(op, g);
  if (op == model::OpClass::A2A && g.link() == model::LinkClass::Inter && g.ranks_per_node > 1)
    out.node_part = node_part_line(g);
  return out;
}

double CommLines::predict_ms(double bytes) const {
  const double network = main.predict_ms(bytes);
  return node_part ? std::max(network, node_part->predict_ms(bytes)) : network;
}

LinearModel CommLines::dominant(double bytes) const {
  return node_part && node_part->predict_ms(bytes) > main.predict_ms(bytes) ? *node_part : main;
}

Milliseconds CostModel::compute(model::OpClass op, double flops) const {
  MOEPLAN_CHECK(!is_communication(op), "compute() called with a communication op");
  return Milliseconds{line_for(op, model::LinkClass::Local, 1).predict_ms(flops)};
}

Milliseconds CostModel::gemm(const GemmShape& shape) const {
  if (gemm_shape_) return Milliseconds{gemm_time_ms(*gemm_shape_, shape)};
  return compute(shape.fp8 ? model::OpClass::GemmFp8 : model::OpClass::Gemm, gemm_flops(shape));
}

Milliseconds CostModel::attention(const model::ModelSpec& model, std::int64_t queries, std::int64_t context,
                                   double flops) const {
  if (!attention_shape_) return compute(model::OpClass::Attention, flops);
  const AttentionTaskShape task = attention_task_shape(model, queries, context, flops);
  double ms = attention_core_ms(*attention_shape_, task.queries, task.context, task.heads, task.head_dim);
  for (const GemmShape& g : task.projections) ms += gemm(g).value;
  return Milliseconds{ms};
}

std::optional<Milliseconds> CostModel::kernel_memory(const std::string& kernel, double bytes) const {
  for (const model::LinearCostSpec& c : kernel_lines_)
    if (*c.kernel == kernel) return Milliseconds{LinearModel{c.alpha_ms, c.beta_ms_per_unit}.predict_ms(bytes)};
  return std::nullopt;
}

LinearModel CostModel::attention_line(model::AttentionPass pass, std::int64_t head_dim) const {
  // The most specific line: pass and head dim, then the pass's, then the head
  // dim's for both passes, then the generic line (docs/cost-model.md, "Fused attention").
  const model::LinearCostSpec* best = nullptr;
  int best_rank = 0;
  for (const model::LinearCostSpec& c : attention_lines_) {
    if (c.attention_pass && *c.attention_pass != pass) continue;
    if (c.head_dim && *c.head_dim != head_dim) continue;
    const int rank = (c.attention_pass ? 2 : 0) + (c.head_dim ? 1 : 0);
    if (rank > best_rank) {
      best = &c;
      best_rank = rank;
    }
  }
  if (best) return LinearModel{best->alpha_ms, best->beta_ms_per_unit};
  if (!has(model::OpClass::Attention, model::LinkClass::Local))
    throw Error(ErrorKind::Input,
                fmt::format("profile {} has no ATTENTION line for the {} pass at head dim {}, and no generic one "
                            "(no attention_pass, no head_dim)",
                            quoted_for_error(profile_name_),
                            pass == model::AttentionPass::Forward ? "forward" : "backward", head_dim),
                "costs");
  return line_for(model::OpClass::Attention, model::LinkClass::Local, 1);
}

Milliseconds CostModel::attention_core(const model::ModelSpec& model, std::int64_t queries, std::int64_t context,
                                       double core_flops, model::AttentionPass pass) const {
  if (!attention_shape_) return Milliseconds{attention_line(pass, model.head_dim).predict_ms(core_flops)};
  model::ModelSpec one_head = model;
  one_head.num_heads = one_head.num_kv_heads = 1;
  const double per_head =
      attention_core_flops(one_head, static_cast<double>(queries), static_cast<double>(context));
  const std::int64_t heads = std::max<std::int64_t>(1, std::llround(core_flops / per_head));
  return Milliseconds{attention_core_ms(*attention_shape_, queries, context, heads, model.head_dim)};
}

Milliseconds CostModel::communication(model::OpClass op, const GroupShape& group, double size_bytes) const {
  return Milliseconds{lines_for(op, group).predict_ms(size_bytes)};
}

Milliseconds CostModel::broadcast(const GroupShape& group, double size_bytes) const {
  if (group.size <= 1) return Milliseconds{0.0};  // no kernel is launched
  const auto n = static_cast<double>(group.size);
  return communication(model::OpClass::AllGather, group, size_bytes * n / (n - 1.0));
}

Milliseconds CostModel::predict(model::OpClass op, model::LinkClass link, std::int64_t group, double size) const {
  if (!is_communication(op)) return compute(op, size);
  if (group <= 1 && op != model::OpClass::P2P) return Milliseconds{0.0};
  return Milliseconds{line_for(op, link, group).predict_ms(size)};
}

Milliseconds expert_ffn_time(const CostModel& costs, double flops, int gemms, model::OpClass op) {
  MOEPLAN_CHECK(gemms > 0, "an expert has at least one GEMM");
  return Milliseconds{static_cast<double>(gemms) * costs.compute(op, flops / static_cast<double>(gemms)).value};
}

GroupShape group_shape(const std::vector<std::int64_t>& ranks, const model::ClusterSpec& cluster) {
  MOEPLAN_CHECK(cluster.gpus_per_node > 0 && !ranks.empty(), "a group needs ranks and nodes");
  // A "node" of the link model is the link domain: the GPUs one NVLink fabric
  // joins (the node itself unless the cluster sets nvlink_domain_gpus), with
  // its nodes' inter-link ports together (docs/cost-model.md, "NVLink domains").
  const std::int64_t domain = cluster.link_domain();
  // Members per domain, as runs of the sorted domain numbers (a tree map cost a
  // node allocation per member: most of a folding plan's time at 2^17 GPUs).
  std::vector<std::int64_t> nodes;
  nodes.reserve(ranks.size());
  for (std::int64_t r : ranks) nodes.push_back(r / domain);
  std::sort(nodes.begin(), nodes.end());
  GroupShape g;
  g.size = static_cast<std::int64_t>(ranks.size());
  for (std::size_t i = 0; i < nodes.size();) {
    std::size_t end = i;
    while (end < nodes.size() && nodes[end] == nodes[i]) ++end;
    g.ranks_per_node = std::max(g.ranks_per_node, static_cast<std::int64_t>(end - i));
    i = end;
  }
  g.gpus_per_node = domain;
  g.nics_per_node = cluster.link_domain_ports();
  g.concurrent_groups = std::max<std::int64_t>(1, domain / g.ranks_per_node);
  return g;
}

GroupShape strided_group_shape(std::int64_t size, std::int64_t stride, const model::ClusterSpec& cluster) {
  MOEPLAN_CHECK(size >= 1 && stride >= 1, "a strided group needs a positive size and stride");
  std::vector<std::int64_t> ranks;
  ranks.reserve(static_cast<std::size_t>(size));
  for (std::int64_t i = 0; i < size; ++i) ranks.push_back(i * stride);
  return group_shape(ranks, cluster);
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
