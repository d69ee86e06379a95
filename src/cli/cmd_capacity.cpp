// moeplan capacity MODEL --cluster KIND [--tokens 2T] [--days 30] [--gpus 64..4096]
//                  [--cost-per-gpu-hour X] [--seq-len N] [--global-batch N] [--json|--csv] [-o FILE]

#include <exception>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/dist/shard.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/plan/capacity.hpp>
#include <moeplan/plan/joint.hpp>
#include <moeplan/io/quantity_text.hpp>
#include <moeplan/output/capacity_report.hpp>

#include "cli_context.hpp"
#include "scenario_support.hpp"

namespace moeplan::cli {
namespace {

struct CapacityOptions {
  std::string model;
  std::string cluster;
  std::string profile;
  std::optional<std::string> tokens;  // given empty is refused, not taken for "not given"
  std::optional<double> days;
  std::optional<std::string> gpus;
  std::optional<double> cost_per_gpu_hour;
  std::int64_t seq_len = plan::kCapacitySeqLen;
  std::int64_t global_batch = plan::kCapacityGlobalBatch;
  std::string output;
  unsigned threads = 0;
  double max_memory_gib = 8;  // set by add_max_memory_option
  bool json = false;
  bool csv = false;
  bool quiet = false;
  std::vector<std::string> search{"recompute"};
};

plan::CapacityRequest request_of(const CapacityOptions& o, CliContext& context) {
  if (o.json && o.csv) throw Error(ErrorKind::Input, "--csv: prints the table as CSV; --json prints it as JSON: choose one");
  check_stdout_outputs(o.json || o.csv, {{"-o", o.output}});
  plan::CapacityQuery q;
  q.model = o.model;
  q.cluster = o.cluster;
  q.profile = o.profile;
  // Quantities as people type them ("2T", "64..4096"), read here at the edge.
  if (o.tokens) q.tokens = io::parse_token_count(*o.tokens, "request.tokens");
  q.days = o.days;
  if (o.gpus) q.gpus = io::parse_count_range(*o.gpus, "request.gpus");
  q.cost_per_gpu_hour = o.cost_per_gpu_hour;
  q.seq_len = o.seq_len;
  q.global_batch = o.global_batch;
  q.max_memory_gib = o.max_memory_gib;
  // "none" opens neither knob.
  q.search = o.search == std::vector<std::string>{"none"} ? std::vector<std::string>{} : o.search;
  q.threads = thread_count(o.threads, context.err);
  return plan::capacity_request(q);
}

void run_capacity_on(const CapacityOptions& o, CliContext& context, const dist::Shard& shard) {
  plan::CapacityRequest r = request_of(o, context);
  // Rows are the work MPI ranks share (row i on rank i mod N); rank 0 draws its own share's bar.
  std::unique_ptr<ProgressBar> bar = progress_bar("capacity", o.quiet || shard.rank() != 0, context.err);
  r.progress = bar.get();
  std::vector<std::string> texts(r.gpus.size());
  plan::ProbeCache probes;  // this rank's rows share their overlap probes
  for (std::size_t i = 0; i < r.gpus.size(); ++i)
    if (shard.mine(i)) texts[i] = output::capacity_row_to_json(plan::capacity_row(r, r.gpus[i], &probes)).dump(-1);
  bar.reset();
  texts = shard.gather(std::move(texts));
  if (shard.rank() != 0) return;  // rank 0 writes and prints
  std::vector<plan::CapacityRow> rows;
  for (const std::string& text : texts) rows.push_back(output::capacity_row_from_json(io::Json::parse(text)));
  const plan::CapacityResult result = plan::capacity_summary(r, std::move(rows));
  const std::string json = output::capacity_to_json(r, result).dump() + "\n";
  const std::string csv = output::capacity_to_csv(result);
  if (!o.output.empty()) {
    const bool as_json = o.output.size() >= 5 && o.output.compare(o.output.size() - 5, 5, ".json") == 0;
    context.outputs.add(o.output, as_json ? json : csv);
  }
  if (o.json) {
    context.out << json;
    return;
  }
  if (o.csv) {
    context.out << csv;
    return;
  }
  context.out << output::capacity_to_text(r, result);
  if (!o.output.empty()) context.out << "  wrote " << o.output << '\n';
}

void run_capacity(const CapacityOptions& o, CliContext& context) {
  const dist::Shard shard;  // every rank reads and checks the request, each computes its rows
  try {
    run_capacity_on(o, context, shard);
  } catch (const Error& e) {
    // Every rank meets a bad option alike; rank 0 reports, the others exit
    // quietly with its code. Rank 0 writes its line here, before the shard
    // ends (its destructor waits for every rank): mpirun ends the job as soon
    // as one rank exits with an error, which could otherwise be before rank
    // 0's line is written.
    if (shard.rank() == 0) report_error(context.err, e);
    context.exit_code = exit_code_of(e);
  }
}

}  // namespace

void add_capacity_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<CapacityOptions>();
  CLI::App* cmd = app.add_subcommand(
      "capacity", "How many GPUs train a model on a token budget by a deadline: the joint search at each GPU count");
  cmd->add_option("model", o->model, "Model (bundled name or path)")->required();
  cmd->add_option("--cluster", o->cluster, "Cluster kind (bundled name or path): node size, GPU, links")->required();
  cmd->add_option("--profile", o->profile, "Cost profile (default: the cluster's <name>-datasheet)");
  cmd->add_option("--tokens", o->tokens, "Token budget: 2T, 500B, 3e11 ...")
      ->type_name(fmt::format("TEXT:{}", io::range_text(io::number_option("request.tokens"))));
  add_number_option(cmd, "request.days", o->days, "Deadline in days (needs --tokens)");
  cmd->add_option("--gpus", o->gpus,
                  "GPU counts N or LO..HI: each node size x 2^k in the range (default: one node to the cluster file's "
                  "size)")
      ->type_name(fmt::format("TEXT:{}", io::range_text(io::number_option("request.gpus"))));
  add_number_option(cmd, "request.cost_per_gpu_hour", o->cost_per_gpu_hour, "Price of one GPU-hour (needs --tokens)");
  add_number_option(cmd, "request.seq_len", o->seq_len,
                    fmt::format("Tokens per sequence (default {})", plan::kCapacitySeqLen));
  add_number_option(cmd, "request.global_batch", o->global_batch,
                    fmt::format("Sequences per iteration (default {})", plan::kCapacityGlobalBatch));
  cmd->add_option("-o,--output", o->output, "Write the table (JSON for a .json name, else CSV; - for stdout)");
  add_threads_option(cmd, o->threads);
  add_quiet_option(cmd, o->quiet);
  add_max_memory_option(cmd, o->max_memory_gib);
  cmd->add_flag("--json", o->json, "Print one JSON object (docs/capacity.schema.json)");
  cmd->add_flag("--csv", o->csv, "Print the table as CSV");
  cmd->add_option("--search", o->search,
                  "Knobs each count's search opens beside the mapping: precision, recompute (default recompute; none: "
                  "neither)")
      ->delimiter(',');
  cmd->callback([o, &context] { run_capacity(*o, context); });
}

}  // namespace moeplan::cli
