// moeplan fit INPUT... -o PROFILE [--json], and moeplan datasheet-profile CLUSTER -o PROFILE

#include <filesystem>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/datasheet_profile.hpp>
#include <moeplan/cost/fit.hpp>
#include <moeplan/io/calibration_input.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/profile_writer.hpp>
#include <moeplan/model/validate.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {
namespace {

struct FitOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string name;
  std::string cluster = "unspecified";
  bool cluster_given = false;
  std::string op;
  std::string link;
  std::int64_t group = 0;
  bool in_place = false;
  bool json = false;
};

std::string profile_name(const std::string& given, const std::string& output) {
  if (!given.empty()) return given;
  std::string stem = std::filesystem::path(output).filename().string();
  const std::size_t dot = stem.find('.');
  return dot == std::string::npos ? stem : stem.substr(0, dot);
}

void run_fit(const FitOptions& o, CliContext& context) {
  check_stdout_outputs(o.json, {{"-o", o.output}});
  // The profile is named after the output file; standard output has no name to lend.
  if (o.output == "-" && o.name.empty()) throw Error(ErrorKind::Input, "-o -: give the profile a --name");
  // The profile's name and cluster end up in the file and in later --json output.
  const std::string name = profile_name(o.name, o.output);
  check_utf8_option(o.name.empty() ? "--name (from the -o file name)" : "--name", name);
  // Given, --cluster names a cluster scenarios can run on (a bundled name or a
  // cluster file), as calibrate's does; left out, the profile says "unspecified".
  const std::string cluster = o.cluster_given ? cluster_name_of(o.cluster) : o.cluster;
  io::NcclTestsOptions nccl;
  if (!o.op.empty()) {
    nccl.op = model::op_class_from_string(o.op);
    if (!nccl.op) throw Error(ErrorKind::Input, fmt::format("--op: unknown operation {}", quoted_for_error(o.op)));
  }
  if (!o.link.empty()) {
    nccl.link = model::link_class_from_string(o.link);
    if (!nccl.link || *nccl.link == model::LinkClass::Local)
      throw Error(ErrorKind::Input, fmt::format("--link: expected intra or inter, got {}", quoted_for_error(o.link)));
  }
  if (o.group > 0) nccl.group = o.group;
  nccl.use_in_place = o.in_place;
  std::vector<model::TimingSample> samples;
  for (const std::string& input : o.inputs) {
    auto more = io::read_calibration_file(input, nccl);
    samples.insert(samples.end(), more.begin(), more.end());
  }
  cost::ProfileFit fit = cost::fit_profile(samples, name, cluster);
  model::validate(fit.profile);
  for (const std::string& w : fit.warnings) context.err << "moeplan: warning: " << w << '\n';
  std::string inputs;
  for (const std::string& input : o.inputs)
    inputs += (inputs.empty() ? "" : ", ") + std::filesystem::path(input).filename().string();
  context.outputs.add(
      o.output, io::profile_to_textproto(fit.profile, fmt::format("Fitted by moeplan fit from {}.\nSizes are bytes "
                                                                  "(communication) or FLOPs (compute); times ms.",
                                                                  inputs)));
  if (o.json) {
    io::Json lines = io::Json::array();
    for (std::size_t i = 0; i < fit.profile.costs.size(); ++i) {
      const model::LinearCostSpec& c = fit.profile.costs[i];
      io::Json line = io::Json::object();
      line.set("op", model::to_string(c.op));
      line.set("link", model::to_string(c.link));
      line.set("group", c.group);
      if (c.ranks_per_node) line.set("ranks_per_node", *c.ranks_per_node);
      line.set("alpha_ms", c.alpha_ms);
      line.set("beta_ms", c.beta_ms_per_unit);
      line.set("r2", c.r2);
      line.set("r2_with_intercept", fit.reports[i].r2_with_intercept);
      line.set("through_origin", fit.reports[i].through_origin);
      line.set("points", c.points);
      lines.push(std::move(line));
    }
    context.out << lines.dump() << '\n';
  } else {
    for (const model::LinearCostSpec& c : fit.profile.costs)
      context.out << fmt::format("{} {} group {}: alpha {:.6g} ms, beta {:.6g} ms/unit, r^2 {:.5f}, {} points\n",
                                 model::to_string(c.op), model::to_string(c.link), c.group, c.alpha_ms,
                                 c.beta_ms_per_unit, c.r2, c.points);
    context.out << "wrote " << o.output << '\n';
  }
}

struct DatasheetOptions {
  std::string cluster;
  std::string output;
  std::string name;
  std::string dtype = "half";
};

void run_datasheet(const DatasheetOptions& o, CliContext& context) {
  check_utf8_option("--name", o.name);
  cost::DatasheetAssumptions assumptions;
  if (o.dtype == "fp32")
    assumptions.dtype = cost::ComputeDtype::Fp32;
  else if (o.dtype != "half")
    throw Error(ErrorKind::Input, fmt::format("--dtype: expected half or fp32, got {}", quoted_for_error(o.dtype)));
  const model::ClusterSpec cluster = io::load_cluster(o.cluster);
  const std::string name = o.name.empty() ? cluster.name + "-datasheet" : o.name;
  const model::CostProfileSpec profile = cost::datasheet_profile(cluster, name, assumptions);
  // The GEMM efficiency the profile used: the cluster file's own for this GPU, when it gives one.
  const cost::DatasheetAssumptions used = cost::for_gpu(cluster.gpu, assumptions);
  const std::string gemm = cluster.gpu.gemm_efficiency && assumptions.dtype == cost::ComputeDtype::Half
                               ? fmt::format("{} (the cluster file's gpu.gemm_efficiency)", used.gemm_efficiency)
                               : fmt::format("{}", used.gemm_efficiency);
  model::validate(profile);
  context.outputs.add(
      o.output,
      io::profile_to_textproto(
          profile, fmt::format("Derived from the datasheet numbers of cluster {} by `moeplan datasheet-profile`\n"
                               "(--dtype {}). Efficiencies: GEMM {}, attention {}, links {} of line rate,\n"
                               "memory-bound kernels {} of memory bandwidth; startup: compute {} ms, attention {} ms,\n"
                               "each expert of a grouped GEMM {} ms, intra {} ms, inter {} ms. Sources: docs/cost-model.md.\n"
                               "Sizes are bytes (communication, elementwise) or FLOPs (compute); times ms.{}{}{}{}",
                               cluster.name, o.dtype, gemm, used.attention_efficiency, used.link_efficiency,
                               used.elementwise_efficiency, used.compute_alpha_ms, used.attention_alpha_ms,
                               used.grouped_product_alpha_ms, used.intra_alpha_ms, used.inter_alpha_ms,
                               !cluster.gpu.fused_attention.empty() && assumptions.dtype == cost::ComputeDtype::Half
                                   ? "\nFused attention by pass and head dim: the cluster file's gpu.fused_attention "
                                     "(attention_pass, head_dim lines)."
                                   : "",
                               cluster.gpu.fused_cross_entropy_efficiency && assumptions.dtype == cost::ComputeDtype::Half
                                   ? "\nFused cross-entropy: the cluster file's gpu.fused_cross_entropy_efficiency "
                                     "(the ELEMENTWISE line of kernel fused_cross_entropy)."
                                   : "",
                               cluster.gpu.gradient_buffer_efficiency
                                   ? "\nGradient buffer passes: the cluster file's gpu.gradient_buffer_efficiency "
                                     "(the ELEMENTWISE line of kernel gradient_buffer)."
                                   : "",
                               used.host_issue ? "\nHost issue time of an eager Megatron-Core MoE block: fitted to "
                                                 "published runs (host_issue; docs/cost-model.md, \"Host time\")."
                                               : "")));
  context.out << "wrote " << o.output << '\n';
}

}  // namespace

void add_fit_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<FitOptions>();
  CLI::App* cmd = app.add_subcommand("fit", "Fit a cost profile from microbenchmark output (CSV or nccl-tests)");
  cmd->add_option("inputs", o->inputs, "CSV with header op,link,group,size,time_ms, or raw nccl-tests output")
      ->required();
  cmd->add_option("-o,--output", o->output, "Profile file to write (text format; - for stdout)")->required();
  cmd->add_option("--name", o->name, "Profile name (default: the output file's stem)");
  cmd->add_option("--cluster", o->cluster, "Cluster the profile prices: a bundled name or a cluster file")
      ->each([o](const std::string&) { o->cluster_given = true; });
  cmd->add_option("--op", o->op, "nccl-tests: the collective, if the file name does not say");
  cmd->add_option("--link", o->link, "nccl-tests: intra or inter, if the device list does not say");
  add_number_option(cmd, "request.group", o->group, "nccl-tests: ranks, if the device list does not say");
  cmd->add_flag("--in-place", o->in_place, "nccl-tests: fit in-place instead of out-of-place times");
  cmd->add_flag("--json", o->json, "Print one JSON array of the fitted lines");
  cmd->callback([o, &context] { run_fit(*o, context); });

  auto d = std::make_shared<DatasheetOptions>();
  CLI::App* ds = app.add_subcommand("datasheet-profile", "Derive a cost profile from a cluster's datasheet numbers");
  ds->add_option("cluster", d->cluster, "Cluster (bundled name or path)")->required();
  ds->add_option("-o,--output", d->output, "Profile file to write (- for stdout)")->required();
  ds->add_option("--name", d->name, "Profile name (default: CLUSTER-datasheet)");
  ds->add_option("--dtype", d->dtype, "Compute peak to use: half (tensor cores) or fp32");
  ds->callback([d, &context] { run_datasheet(*d, context); });
}

}  // namespace moeplan::cli
