// moeplan mappings --world N [--tp N] [--cp N] [--pp N] [--ep N] [--etp N] [--vpp N]
//                  [--order O] [--gpus-per-node N] [--json]

#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/parallel/rank_groups.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {
namespace {

struct MappingsOptions {
  parallel::MappingRequest request;
  std::int64_t etp = 0;
  std::int64_t gpus_per_node = 0;
  bool json = false;
};

io::Json groups_json(const parallel::RankGroups& groups) {
  io::Json out = io::Json::array();
  for (const auto& group : groups) {
    io::Json g = io::Json::array();
    for (std::int64_t r : group) g.push(r);
    out.push(std::move(g));
  }
  return out;
}

io::Json links_json(const parallel::RankGroups& groups, std::int64_t gpus_per_node) {
  io::Json out = io::Json::array();
  for (const auto& group : groups) out.push(model::to_string(cost::link_class_of(group, gpus_per_node)));
  return out;
}

void run_mappings(const MappingsOptions& o, CliContext& context) {
  parallel::MappingRequest q = o.request;
  if (o.etp > 0) q.etp = o.etp;
  if (o.gpus_per_node < 0) throw Error(ErrorKind::Input, "--gpus-per-node: must be positive");
  // The library names the scenario's fields (parallelism.order); here they are this command's options.
  const parallel::Mapping m = [&] {
    try {
      return parallel::make_mapping(q);
    } catch (const Error& e) {
      const std::string prefix = "parallelism.";
      const std::string field = e.field().rfind(prefix, 0) == 0 ? e.field().substr(prefix.size()) : "";
      for (const char* option : {"world", "tp", "cp", "pp", "ep", "etp", "vpp", "order"})
        if (field == option) throw Error(e.kind(), e.reason(), std::string(kRequestField) + field);
      throw;
    }
  }();
  const std::vector<std::string> attention_keys{"tp", "cp", "dp", "pp"}, expert_keys{"etp", "ep", "edp", "pp"};
  if (o.json) {
    io::Json doc = io::Json::object(), att = io::Json::object(), exp = io::Json::object();
    for (const std::string& k : attention_keys) att.set(k, groups_json(m.attention.at(k)));
    for (const std::string& k : expert_keys) exp.set(k, groups_json(m.expert.at(k)));
    doc.set("attention", att);
    doc.set("expert", exp);
    if (o.gpus_per_node > 0) {
      io::Json att_links = io::Json::object(), exp_links = io::Json::object();
      for (const std::string& k : attention_keys) att_links.set(k, links_json(m.attention.at(k), o.gpus_per_node));
      for (const std::string& k : expert_keys) exp_links.set(k, links_json(m.expert.at(k), o.gpus_per_node));
      doc.set("attention_links", att_links);
      doc.set("expert_links", exp_links);
    }
    context.out << doc.dump() << '\n';
    return;
  }
  context.out << fmt::format(
      "world {}: attention tp {} cp {} dp {} pp {}; experts etp {} ep {} edp {} pp {}; order {}\n", q.world, q.tp, q.cp,
      m.dp, q.pp, m.etp, q.ep, m.edp, q.pp, q.order);
  auto print = [&](const char* kind, const std::string& key, const parallel::RankGroups& groups) {
    std::string line = fmt::format("{} {}:", kind, key);
    for (const auto& g : groups) {
      std::string ranks;
      for (std::int64_t r : g) ranks += fmt::format("{}{}", ranks.empty() ? "" : ",", r);
      line += " [" + ranks + "]";
      if (o.gpus_per_node > 0) line += fmt::format("({})", model::to_string(cost::link_class_of(g, o.gpus_per_node)));
    }
    context.out << line << '\n';
  };
  for (const std::string& k : attention_keys) print("attention", k, m.attention.at(k));
  for (const std::string& k : expert_keys) print("expert", k, m.expert.at(k));
}

}  // namespace

void add_mappings_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<MappingsOptions>();
  CLI::App* cmd = app.add_subcommand("mappings", "Print Megatron-Core rank groups for attention and experts");
  add_number_option(cmd, "request.world", o->request.world, "World size")->required();
  add_number_option(cmd, "request.tp", o->request.tp, "Tensor parallel");
  add_number_option(cmd, "request.cp", o->request.cp, "Context parallel");
  add_number_option(cmd, "request.pp", o->request.pp, "Pipeline parallel");
  add_number_option(cmd, "request.ep", o->request.ep, "Expert parallel");
  add_number_option(cmd, "request.etp", o->etp, "Expert tensor parallel (default: tp)");
  add_number_option(cmd, "request.vpp", o->request.vpp, "Virtual pipeline stages");
  cmd->add_option("--order", o->request.order, "Rank order, fastest first (default tp-cp-ep-dp-pp)");
  add_number_option(cmd, "request.gpus_per_node", o->gpus_per_node, "Mark each group intra- or inter-node");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o, &context] { run_mappings(*o, context); });
}

}  // namespace moeplan::cli
