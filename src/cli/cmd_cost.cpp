// moeplan cost --profile P --op OP --size N [--link intra|inter] [--group G]
//              [--ranks-per-node M [--concurrent K] [--cluster C]] [--json]

#include <cmath>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/bus_factor.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {
namespace {

struct CostOptions {
  std::string profile;
  std::string op;
  double size = 0;
  std::string link;
  std::int64_t group = 0;
  std::int64_t ranks_per_node = 0;
  std::int64_t concurrent = 0;
  std::string cluster;
  bool json = false;
};

model::LinkClass choose_link(const CostOptions& o, model::OpClass op, const cost::CostModel& costs) {
  if (!cost::is_communication(op)) {
    if (!o.link.empty()) throw Error(ErrorKind::Input, fmt::format("--link: {} runs on one GPU; omit --link", o.op));
    return model::LinkClass::Local;
  }
  if (!o.link.empty()) {
    const auto link = model::link_class_from_string(o.link);
    if (!link || *link == model::LinkClass::Local)
      throw Error(ErrorKind::Input, fmt::format("--link: expected intra or inter, got {}", quoted_for_error(o.link)));
    return *link;
  }
  const bool intra = costs.has(op, model::LinkClass::Intra);
  const bool inter = costs.has(op, model::LinkClass::Inter);
  if (intra != inter) return intra ? model::LinkClass::Intra : model::LinkClass::Inter;
  throw Error(ErrorKind::Input, fmt::format("--link: profile has {} on {}; say --link intra or --link inter", o.op,
                                            intra ? "both links" : "no link"));
}

// A placed group: --ranks-per-node members on each node of the profile's
// cluster (or --cluster), --concurrent groups of its kind per node (default all).
cost::GroupShape placed_group(const CostOptions& o, const model::CostProfileSpec& profile, std::int64_t group) {
  const model::ClusterSpec cluster = io::load_cluster(o.cluster.empty() ? profile.cluster : o.cluster);
  // A node of the link model is the cluster's link domain (its NVLink domain, else the node).
  const std::int64_t domain = cluster.link_domain();
  if (o.ranks_per_node > group || o.ranks_per_node > domain)
    throw Error(ErrorKind::Input, fmt::format("--ranks-per-node: {} exceeds the group ({}) or the node ({} GPUs)",
                                              o.ranks_per_node, group, domain));
  cost::GroupShape g{group, o.ranks_per_node, domain, cluster.link_domain_ports(),
                     o.concurrent > 0 ? o.concurrent : std::max<std::int64_t>(1, domain / o.ranks_per_node)};
  return g;
}

void run_cost(const CostOptions& o, CliContext& context) {
  const auto op = model::op_class_from_string(o.op);
  if (!op) throw Error(ErrorKind::Input, fmt::format("--op: unknown operation {}", quoted_for_error(o.op)));
  if (!std::isfinite(o.size) || o.size < 0)
    throw Error(ErrorKind::Input, "--size: must be a finite, non-negative number");
  if (o.group < 0) throw Error(ErrorKind::Input, "--group: must be positive");
  if (o.ranks_per_node < 0) throw Error(ErrorKind::Input, "--ranks-per-node: must be positive");
  if (o.concurrent < 0) throw Error(ErrorKind::Input, "--concurrent: must be positive");
  const bool placed = o.ranks_per_node > 0;
  if (!placed && (o.concurrent > 0 || !o.cluster.empty()))
    throw Error(ErrorKind::Input,
                fmt::format("{}: applies only with --ranks-per-node", o.concurrent > 0 ? "--concurrent" : "--cluster"));
  if (placed && !cost::is_communication(*op))
    throw Error(ErrorKind::Input, fmt::format("--ranks-per-node: {} runs on one GPU", o.op));
  if (placed && !o.link.empty())
    throw Error(ErrorKind::Input, "--link: the placement (--ranks-per-node) decides the link; omit --link");
  const model::CostProfileSpec profile = io::load_profile(o.profile);
  const cost::CostModel costs(profile);
  if (placed) {
    if (o.group == 0) throw Error(ErrorKind::Input, "--group: required with --ranks-per-node");
    const cost::GroupShape g = placed_group(o, profile, o.group);
    const double time_ms = costs.communication(*op, g, o.size).value;
    if (o.json) {
      io::Json doc = io::Json::object();
      doc.set("op", model::to_string(*op));
      doc.set("link", model::to_string(g.link()));
      doc.set("group", g.size);
      doc.set("ranks_per_node", g.ranks_per_node);
      doc.set("concurrent_groups", g.concurrent_groups);
      doc.set("size", o.size);
      doc.set("time_ms", time_ms);
      context.out << doc.dump() << '\n';
    } else {
      context.out << fmt::format(
          "{} over {} ranks, {} per node, {} such groups per node: size {:.6g} bytes: {:.6g} ms\n",
          model::to_string(*op), g.size, g.ranks_per_node, g.concurrent_groups, o.size, time_ms);
    }
    return;
  }
  const model::LinkClass link = choose_link(o, *op, costs);
  // Without --group, the group the profile measured (so the answer is the measured line).
  const std::int64_t group = o.group > 0 ? o.group : costs.measured_group(*op, link, 1);
  const double time_ms = costs.predict(*op, link, group, o.size).value;
  if (o.json) {
    io::Json doc = io::Json::object();
    doc.set("op", model::to_string(*op));
    doc.set("link", model::to_string(link));
    doc.set("group", group);
    doc.set("size", o.size);
    doc.set("time_ms", time_ms);
    context.out << doc.dump() << '\n';
  } else {
    context.out << fmt::format("{} on {} link, group {}, size {:.6g} {}: {:.6g} ms\n", model::to_string(*op),
                               model::to_string(link), group, o.size, cost::is_communication(*op) ? "bytes" : "FLOPs",
                               time_ms);
  }
}

}  // namespace

void add_cost_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<CostOptions>();
  CLI::App* cmd = app.add_subcommand("cost", "Predict the time of one operation from a cost profile");
  cmd->add_option("--profile", o->profile, "Cost profile (bundled name or path)")->required();
  cmd->add_option("--op", o->op,
                  "gemm, attention (size in FLOPs); a2a, allgather, reducescatter, allreduce, p2p (bytes)")
      ->required();
  add_number_option(cmd, "request.size", o->size, "FLOPs or bytes (nccl-tests size)")->required();
  cmd->add_option("--link", o->link, "intra or inter (communication only)");
  add_number_option(cmd, "request.group", o->group, "Ranks in the collective (default: the measured group)");
  add_number_option(cmd, "request.ranks_per_node", o->ranks_per_node,
                    "Members of the group on one node: price the placed group (shared NICs, split AlltoAll)");
  add_number_option(cmd, "request.concurrent", o->concurrent,
                    "Groups of this kind crossing one node at once (default: all, GPUs per node / ranks per node)");
  cmd->add_option("--cluster", o->cluster, "Cluster of the placement (default: the profile's cluster)");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o, &context] { run_cost(*o, context); });
}

}  // namespace moeplan::cli
