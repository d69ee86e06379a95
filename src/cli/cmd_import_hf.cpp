// moeplan import-hf CONFIG -o MODEL [--name NAME] [--drop-mtp] [--json]

#include <memory>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/io/hf_config.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/model/model_stats.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {
namespace {

struct HfImportOptions {
  std::string config;
  std::string output;
  std::string name;
  bool drop_mtp = false;
  bool json = false;
};

void run_hf_import(const HfImportOptions& o, CliContext& context) {
  check_utf8_option("--name", o.name);
  check_stdout_outputs(o.json, {{"--output", o.output}});
  const io::HfImport imported = io::import_hf_config(o.config, {o.name, o.drop_mtp});
  const model::ModelSpec& m = imported.model;
  const model::ParamCounts params = model::count_params(m);
  // The file's notes name the CLI's flags, as the notes printed below do.
  context.outputs.add(o.output, name_options(imported.text, flag_of));
  if (o.json) {
    io::Json j = io::Json::object();
    j.set("file", o.output);
    j.set("model_type", imported.model_type);
    j.set("name", m.name);
    j.set("params_total", params.total);
    j.set("params_active", params.active_per_token);
    j.set("flops_per_token", model::forward_matmul_flops_per_token(m));
    io::Json notes = io::Json::array();
    for (const std::string& n : imported.notes) notes.push(name_options(n, flag_of));
    j.set("notes", notes);
    context.out << j.dump() << '\n';
    return;
  }
  if (o.output == "-") return;  // standard output carries the model alone
  const std::string experts = m.is_dense() ? std::string("dense (no experts)")
                                            : fmt::format("{} MoE, {} experts top-{}", m.num_moe_layers(),
                                                          m.moe.num_experts, m.moe.top_k);
  context.out << fmt::format("wrote {}: {} ({}), {} blocks, {}\n", o.output, m.name, imported.model_type, m.num_layers,
                             experts);
  context.out << fmt::format("  parameters: {:.3f} B total, {:.3f} B active per token\n",
                             static_cast<double>(params.total) / 1e9,
                             static_cast<double>(params.active_per_token) / 1e9);
  for (const std::string& n : imported.notes) context.out << "  note: " << name_options(n, flag_of) << '\n';
}

}  // namespace

void add_import_hf_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<HfImportOptions>();
  CLI::App* cmd = app.add_subcommand("import-hf", "Write a model file from a Hugging Face config.json");
  cmd->add_option("config", o->config, "config.json (mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3)")
      ->required();
  cmd->add_option("-o,--output", o->output, "Model file to write (text format; - for stdout)")->required();
  cmd->add_option("--name", o->name, "Model name (default: the file's stem, or its folder's name for config.json)");
  cmd->add_flag("--drop-mtp", o->drop_mtp,
                "Import DeepSeek-V3's main model without its multi-token prediction modules");
  cmd->add_flag("--json", o->json, "Print the model's name, parameter counts and notes as JSON");
  cmd->callback([o, &context] { run_hf_import(*o, context); });
}

}  // namespace moeplan::cli
