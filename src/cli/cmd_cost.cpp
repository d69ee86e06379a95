// moeplan cost --profile P --op OP --size N [--link intra|inter] [--group G] [--json]

#include <cmath>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/bus_factor.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/io/json.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {
namespace {

struct CostOptions {
  std::string profile;
  std::string op;
  double size = 0;
  std::string link;
  std::int64_t group = 0;
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
      throw Error(ErrorKind::Input, fmt::format("--link: expected intra or inter, got '{}'", o.link));
    return *link;
  }
  const bool intra = costs.has(op, model::LinkClass::Intra);
  const bool inter = costs.has(op, model::LinkClass::Inter);
  if (intra != inter) return intra ? model::LinkClass::Intra : model::LinkClass::Inter;
  throw Error(ErrorKind::Input, fmt::format("--link: profile has {} on {}; say --link intra or --link inter", o.op,
                                            intra ? "both links" : "no link"));
}

void run_cost(const CostOptions& o, CliContext& context) {
  const auto op = model::op_class_from_string(o.op);
  if (!op) throw Error(ErrorKind::Input, fmt::format("--op: unknown operation '{}'", o.op));
  if (!std::isfinite(o.size) || o.size < 0)
    throw Error(ErrorKind::Input, "--size: must be a finite, non-negative number");
  if (o.group < 0) throw Error(ErrorKind::Input, "--group: must be positive");
  const cost::CostModel costs(io::load_profile(o.profile));
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
  cmd->add_option("--size", o->size, "FLOPs or bytes (nccl-tests size)")->required();
  cmd->add_option("--link", o->link, "intra or inter (communication only)");
  cmd->add_option("--group", o->group, "Ranks in the collective (default: the measured group)");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o, &context] { run_cost(*o, context); });
}

}  // namespace moeplan::cli
