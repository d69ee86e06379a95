// moeplan calibrate --backend host|cuda -o PROFILE [--quick] [--cluster NAME]

#include <memory>
#include <optional>
#include <ostream>

#include "calibrate_support.hpp"
#include "cli_context.hpp"

namespace moeplan::cli {
namespace {

void run_calibrate(CalibrationRequest o, CliContext& context) {
  // The profile prices a cluster that scenarios name: --cluster must be one
  // (a bundled name or a cluster file), whose name the profile then carries,
  // so that a scenario on that cluster accepts the profile.
  o.cluster = cluster_name_of(o.cluster);
  const std::optional<CalibratedProfile> c = calibrate_profile(o, context.err);
  if (!c) return;  // an MPI process other than 0
  context.outputs.add(o.output, c->textproto);
  context.outputs.add(c->points_path, c->points_csv);
  context.out << c->summary << "wrote " << o.output << " and " << c->points_path << '\n';
}

}  // namespace

void add_calibrate_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<CalibrationRequest>();
  o->cluster = "host-2";
  CLI::App* cmd =
      app.add_subcommand("calibrate", "Measure this machine with microbenchmarks and write a fitted cost profile");
  cmd->add_option("--backend", o->backend,
                  "host (CPU GEMMs and attention; MPI collectives under mpirun) or cuda (cuBLAS, NCCL; GPU build)")
      ->required();
  cmd->add_option("-o,--output", o->output, "Profile file to write; the points go to its .points.csv")->required();
  cmd->add_option("--name", o->name, "Profile name (default: the output file's stem)");
  cmd->add_option("--cluster", o->cluster, "Cluster the profile prices: a bundled name or a cluster file (default host-2)");
  cmd->add_flag("--quick", o->quick, "Fewer shapes, sizes and repetitions (under ~20 s)");
  cmd->callback([o, &context] { run_calibrate(*o, context); });
}

}  // namespace moeplan::cli
