// moeplan export-chakra SCENARIO|PLAN -o DIR [--schedule NAME] [--degree N] [--set k=v]... [--json]
// moeplan import-chakra DIR --cluster C --profile P [--comm model|trace] [--json]

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/interop/chakra.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/plan_reader.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/plan/result_json.hpp>

#include "cli_context.hpp"
#include "scenario_support.hpp"

namespace moeplan::cli {
namespace {

namespace fs = std::filesystem;

struct ExportOptions {
  std::string scenario;
  std::string output;
  std::string schedule;
  std::optional<std::int64_t> degree;
  std::vector<std::string> sets;
  double max_memory_gib = 8;  // set by add_max_memory_option
  bool json = false;
};

// The folder holds no trace files this export would not overwrite (a stale
// trace.9.et of a larger run would join the import), or is staged with the
// outputs: a failed command, stdout unwritable included, leaves no new folder.
void prepare_folder(const std::string& dir, std::size_t ranks, io::OutputSet& outputs) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error(ErrorKind::Input, fmt::format("-o: {} exists and is not a directory", quoted_for_error(dir)));
  if (fs::is_directory(dir, ec)) {
    std::vector<std::string> stale;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      // trace.N.et for a rank N of this export (one lookup, not one per rank).
      const std::string prefix = std::string(interop::kChakraPrefix) + ".";
      bool ours = false;
      if (name.size() > prefix.size() + 3 && name.rfind(prefix, 0) == 0) {
        const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 3);
        std::size_t rank = 0;
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
        ours = error == std::errc() && end == digits.data() + digits.size() && rank < ranks &&
               name == interop::chakra_file_name(static_cast<std::int32_t>(rank));
      }
      if (!ours && name.size() > 3 && name.compare(name.size() - 3, 3, ".et") == 0) stale.push_back(name);
    }
    std::sort(stale.begin(), stale.end());
    if (!stale.empty())
      throw Error(ErrorKind::Input,
                  fmt::format("-o: {} already holds {}{}, which this export ({} ranks) would not replace; remove them "
                              "or choose another folder",
                              quoted_for_error(dir), stale.front(),
                              stale.size() > 1 ? fmt::format(" and {} more .et files", stale.size() - 1) : "", ranks));
    return;
  }
  outputs.add_folder(dir);
}

// Stages each rank's file as the export makes it (OutputSet::add writes it to
// its temporary at once), so that no more than one file is held.
class StagedFolder final : public interop::ChakraFileSink {
 public:
  StagedFolder(std::string dir, io::OutputSet& outputs) : dir_(std::move(dir)), outputs_(outputs) {}
  void begin(std::int32_t ranks) override { prepare_folder(dir_, static_cast<std::size_t>(ranks), outputs_); }
  void file(std::int32_t rank, std::string_view bytes) override {
    written.push_back((fs::path(dir_) / interop::chakra_file_name(rank)).string());
    outputs_.add(written.back(), bytes);
  }
  std::vector<std::string> written;

 private:
  std::string dir_;
  io::OutputSet& outputs_;
};

void run_export(const ExportOptions& o, CliContext& context) {
  // Before the run: "-" names standard output elsewhere, and one stream cannot hold a folder of files.
  if (o.output == "-")
    throw Error(ErrorKind::Input, "-o: export-chakra writes a folder of files, which cannot be standard output ('-')");
  const plan::ScenarioRun run(
      with_max_memory(io::load_scenario_or_plan(o.scenario, parse_overrides(o.sets)), o.max_memory_gib));
  StagedFolder folder(o.output, context.outputs);
  const interop::ScenarioChakraExport ex = interop::export_scenario_chakra(run, o.schedule, o.degree, folder);
  const interop::ChakraExport& t = ex.trace;
  std::vector<std::string>& written = folder.written;
  written.push_back((fs::path(o.output) / interop::kChakraCommGroupsFile).string());
  context.outputs.add(written.back(), t.comm_groups_json);
  if (o.json) {
    io::Json j = io::Json::object();
    j.set("scenario", run.spec().name);
    j.set("schedule", ex.schedule);
    j.set("iteration_ms", ex.iteration_ms);
    j.set("ranks", static_cast<std::int64_t>(t.ranks));
    j.set("compute_nodes", static_cast<std::int64_t>(t.compute_nodes));
    j.set("collective_nodes", static_cast<std::int64_t>(t.collective_nodes));
    j.set("send_nodes", static_cast<std::int64_t>(t.send_nodes));
    j.set("recv_nodes", static_cast<std::int64_t>(t.recv_nodes));
    j.set("groups", static_cast<std::int64_t>(t.groups));
    io::Json files = io::Json::array();
    for (const std::string& path : written) files.push(path);
    j.set("files", files);
    context.out << j.dump() << '\n';
    return;
  }
  context.out << fmt::format(
      "{} {}: {:.3f} ms per iteration; wrote {} rank files to {} ({}.RANK.et: {} compute, {} collective, {} send and "
      "{} receive nodes) and {} ({} groups)\n",
      run.spec().name, ex.schedule, ex.iteration_ms, t.ranks, o.output, interop::kChakraPrefix, t.compute_nodes,
      t.collective_nodes, t.send_nodes, t.recv_nodes, interop::kChakraCommGroupsFile, t.groups);
}

struct ImportOptions {
  std::string directory;
  std::string cluster;
  std::string profile;
  std::string comm = "model";
  bool json = false;
};

void run_import(const ImportOptions& o, CliContext& context) {
  const interop::CommPricing comm = o.comm == "trace" ? interop::CommPricing::Trace : interop::CommPricing::Model;
  const model::ClusterSpec cluster = io::load_cluster(o.cluster);
  const cost::CostModel costs(io::load_profile(o.profile));
  const interop::ChakraImport imported =
      interop::import_chakra(interop::read_chakra_directory(o.directory), cluster, costs, comm);
  if (imported.built.graph.size() == 0)
    throw Error(ErrorKind::Input, "holds no operation to simulate", "", SourceLocation{o.directory, 0, 0});
  sim::Timeline timeline;
  try {
    timeline = plan::run_schedule(imported.built);
  } catch (const Error& e) {
    // Ranks whose pools take collectives in orders that never meet: the trace's
    // doing (in-order streams are checked as cycles when the graph is built).
    if (e.kind() != ErrorKind::Runtime || e.reason().rfind("deadlock:", 0) != 0) throw;
    throw Error(ErrorKind::Input, "the trace cannot run to its end on moeplan's streams: " + e.reason(), "",
                SourceLocation{o.directory, 0, 0});
  }
  if (!(timeline.makespan_ms > 0))
    throw Error(ErrorKind::Input, "every operation of the trace takes no time: nothing to simulate", "",
                SourceLocation{o.directory, 0, 0});
  const plan::Evaluation e = plan::evaluate(imported.built, timeline);
  if (o.json) {
    io::Json j = plan::evaluation_to_json(o.directory, e);
    j.set("ranks", static_cast<std::int64_t>(imported.ranks));
    j.set("compute_tasks", static_cast<std::int64_t>(imported.compute_tasks));
    j.set("collectives", static_cast<std::int64_t>(imported.collectives));
    j.set("transfers", static_cast<std::int64_t>(imported.transfers));
    j.set("comm", o.comm);
    j.set("priced_by_model", static_cast<std::int64_t>(imported.priced_by_model));
    j.set("representative", imported.representative);
    context.out << j.dump() << '\n';
    return;
  }
  context.out << fmt::format(
      "{}: {} ranks, {} tasks ({} compute, {} collectives, {} transfers; communication priced by the {}): iteration "
      "{:.3f} ms, exposed comm {:.3f} ms, bubbles {:.3f} ms\n",
      o.directory, imported.ranks, e.tasks, imported.compute_tasks, imported.collectives, imported.transfers,
      comm == interop::CommPricing::Model ? "cost model" : "trace", e.iteration_ms, e.exposed_comm_ms, e.bubble_ms);
}

}  // namespace

void add_chakra_commands(CLI::App& app, CliContext& context) {
  auto x = std::make_shared<ExportOptions>();
  CLI::App* ex = app.add_subcommand(
      "export-chakra", "Write a scenario's (or plan's) task graph as Chakra execution traces, one file per rank");
  ex->add_option("scenario", x->scenario, "Scenario or plan (bundled name or path)")->required();
  ex->add_option("-o,--output", x->output, "Folder to write trace.RANK.et and comm_groups.json into")->required();
  ex->add_option("--schedule", x->schedule, "The schedule to export (default: the scenario's)");
  add_number_option(ex, "request.degree", x->degree, "Overlap degree, as simulate --degree");
  ex->add_option("--set", x->sets, "Override a scalar field: field.path=value (repeatable)");
  add_max_memory_option(ex, x->max_memory_gib);
  ex->add_flag("--json", x->json, "Print JSON");
  ex->callback([x, &context] { run_export(*x, context); });

  auto i = std::make_shared<ImportOptions>();
  CLI::App* im = app.add_subcommand("import-chakra", "Simulate a folder of Chakra execution traces on the engine");
  im->add_option("directory", i->directory, "Folder of PREFIX.RANK.et files (and comm_groups.json)")->required();
  im->add_option("--cluster", i->cluster, "Cluster the ranks run on (bundled name or path)")->required();
  im->add_option("--profile", i->profile, "Cost profile (bundled name or path)")->required();
  im->add_option("--comm", i->comm,
                 "model: price collectives and transfers by the cost model (default); trace: take their time from "
                 "the trace")
      ->check(CLI::IsMember({"model", "trace"}));
  im->add_flag("--json", i->json, "Print JSON: simulate's keys, and the trace's counts");
  im->callback([i, &context] { run_import(*i, context); });
}

}  // namespace moeplan::cli
