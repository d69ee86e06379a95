// moeplan validate FILE... [--json]

#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/model/model_stats.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {
namespace {

struct ValidateOptions {
  std::vector<std::string> files;
  std::vector<std::string> sets;
  bool json = false;
};

void add_model_stats(io::Json& entry, const model::ModelSpec& m) {
  const model::ParamCounts params = model::count_params(m);
  entry.set("params_total", params.total);
  entry.set("params_active", params.active_per_token);
  entry.set("flops_per_token", model::forward_matmul_flops_per_token(m));
}

std::string model_summary(const model::ModelSpec& m) {
  const model::ParamCounts params = model::count_params(m);
  const std::string experts =
      m.is_dense() ? std::string("dense (no experts)") : fmt::format("{} experts top-{}", m.moe.num_experts, m.moe.top_k);
  return fmt::format(
      "  {}: {} blocks ({} MoE), d_model {}, {}\n"
      "  parameters: {:.3f} B total, {:.3f} B active per token\n"
      "  forward FLOPs per token (weight GEMMs): {:.4g}\n",
      m.name, m.num_layers, m.num_moe_layers(), m.d_model, experts,
      static_cast<double>(params.total) / 1e9, static_cast<double>(params.active_per_token) / 1e9,
      model::forward_matmul_flops_per_token(m));
}

std::string scenario_summary(const model::ScenarioSpec& s) {
  const model::ParallelSpec& p = s.parallel;
  const model::WorkloadSpec& w = s.workload;
  const double tokens = static_cast<double>(w.global_batch_size * w.seq_len);
  // Training FLOPs = 3 x forward (backward computes two GEMMs per forward GEMM).
  const double flops = 3.0 * tokens * model::forward_flops_per_token(s.model, w.seq_len);
  std::string out = fmt::format("  scenario {}\n", s.name);
  out += model_summary(s.model);
  out += fmt::format("  cluster {}: {} nodes x {} {} = {} GPUs\n", s.cluster.name, s.cluster.num_nodes,
                     s.cluster.gpus_per_node, s.cluster.gpu.name, s.cluster.world_size());
  out += fmt::format("  attention: tp {} cp {} dp {} pp {}{}; experts: etp {} ep {} edp {} pp {}\n", p.tp, p.cp, p.dp,
                     p.pp, p.sequence_parallel ? " +sp" : "", p.etp, p.ep, p.edp, p.pp);
  out += fmt::format("  workload: seq {} x global batch {} = {:.0f} tokens, {} micro-batches per DP rank\n", w.seq_len,
                     w.global_batch_size, tokens, w.micro_batches_per_rank(p.dp));
  out += fmt::format("  model FLOPs per iteration: {:.4g}\n", flops);
  out += fmt::format("  cost profile: {}\n", s.profile ? s.profile->name : std::string("(none)"));
  return out;
}

void run_validate(const ValidateOptions& options, CliContext& context) {
  io::Json results = io::Json::array();
  for (const std::string& file : options.files) {
    io::Json entry = io::Json::object();
    entry.set("file", file);
    try {
      const io::ValidatedFile checked = io::validate_file(file, parse_overrides(options.sets));
      entry.set("kind", io::to_string(checked.kind));
      entry.set("ok", true);
      entry.set("error", nullptr);
      if (checked.model) add_model_stats(entry, *checked.model);
      if (checked.scenario) add_model_stats(entry, checked.scenario->model);
      if (!options.json) {
        context.out << fmt::format("ok {} ({})\n", file, io::to_string(checked.kind));
        if (checked.model) context.out << model_summary(*checked.model);
        if (checked.scenario) context.out << scenario_summary(*checked.scenario);
      }
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Input) throw;
      const Error located = e.location().file.empty() ? e.located(SourceLocation{file, 0, 0}) : e;
      entry.set("kind", nullptr);
      entry.set("ok", false);
      entry.set("error", format_error(located, flag_of));
      context.err << "moeplan: error: " << format_error(located, flag_of) << '\n';
      context.exit_code = 2;
    }
    results.push(std::move(entry));
  }
  if (options.json) context.out << results.dump() << '\n';
}

}  // namespace

void add_validate_command(CLI::App& app, CliContext& context) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd =
      app.add_subcommand("validate", "Check input files of any kind (model, cluster, profile, scenario, plan, sweep)");
  cmd->add_option("files", options->files, "Files to check")->required();
  cmd->add_flag("--json", options->json, "Print one JSON array on stdout");
  cmd->add_option("--set", options->sets, "Override a scalar field of a scenario: field.path=value (repeatable)");
  cmd->callback([options, &context] { run_validate(*options, context); });
}

}  // namespace moeplan::cli
