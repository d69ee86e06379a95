// moeplan simulate SCENARIO [--schedule NAME|all] [--degree N] [--set k=v]...
//                  [--trace F.json] [--svg F.svg] [--trace-ranks LIST] [--threads N] [--json]

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/parallel.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/plan_reader.hpp>
#include <moeplan/output/simulation_report.hpp>
#include <moeplan/output/timeline_writer.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/plan/simulate.hpp>
#include <moeplan/sim/analysis.hpp>

#include "cli_context.hpp"
#include "scenario_support.hpp"

namespace moeplan::cli {
namespace {

struct SimulateOptions {
  std::string scenario;
  std::string schedule;
  std::optional<std::int64_t> degree;
  std::vector<std::string> sets;
  std::string trace;
  std::string svg;
  std::string trace_ranks;  // empty: the default choice
  unsigned threads = 0;
  double max_memory_gib = 8;  // set by add_max_memory_option
  bool json = false;
};

// With several schedules, "out.json" becomes "out.<schedule>.json".
std::string output_name(const std::string& path, const std::string& schedule, bool several) {
  if (!several) return path;
  const std::size_t dot = path.rfind('.');
  const std::size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + schedule;
  return path.substr(0, dot) + "." + schedule + path.substr(dot);
}

// Traces draw every rank of a run up to this many; above, ranks 0..kTraceFirstRanks-1 and the critical rank.
constexpr std::size_t kTraceAllRanksUpTo = 64;
constexpr std::int32_t kTraceFirstRanks = 8;

// "0,7,12-15" -> {0, 7, 12, 13, 14, 15}: ranks and inclusive ranges, comma-separated.
std::vector<std::int32_t> parse_rank_list(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::Input, fmt::format("--trace-ranks: {} in {} (ranks and ranges, e.g. 0,7,12-15)", why,
                                               quoted_for_error(text)));
  };
  auto number = [&](std::string_view part) {
    std::int32_t value = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || value < 0)
      throw bad(fmt::format("{} is not a rank", quoted_for_error(part)));
    return value;
  };
  std::vector<std::int32_t> ranks;
  std::string_view rest(text);
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      ranks.push_back(number(item));
    } else {
      const std::int32_t first = number(item.substr(0, dash)), last = number(item.substr(dash + 1));
      if (last < first) throw bad(fmt::format("range {} runs backwards", quoted_for_error(item)));
      if (last - first >= 1 << 20) throw bad(fmt::format("range {} is too long", quoted_for_error(item)));
      for (std::int32_t r = first; r <= last; ++r) ranks.push_back(r);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

// "0-7, 9" for a sorted rank list.
std::string rank_list_text(const std::vector<std::int32_t>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

// The ranks a trace or SVG draws (empty: all): --trace-ranks, else every rank
// up to kTraceAllRanksUpTo, else ranks 0-7 and the critical rank, said on stderr.
std::vector<std::int32_t> trace_ranks(const SimulateOptions& o, const dag::TaskGraph& graph,
                                      const sim::Timeline& timeline, const std::string& schedule, CliContext& context) {
  std::vector<std::int32_t> present;
  for (const dag::Resource& r : graph.resources()) present.push_back(r.rank);
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  if (!o.trace_ranks.empty()) {
    std::vector<std::int32_t> chosen = parse_rank_list(o.trace_ranks);
    for (std::int32_t r : chosen)
      if (!std::binary_search(present.begin(), present.end(), r))
        throw Error(ErrorKind::Input, fmt::format("--trace-ranks: rank {} is not in the {} run (its ranks: {})", r,
                                                  schedule, rank_list_text(present)));
    return chosen;
  }
  if (present.size() <= kTraceAllRanksUpTo) return {};
  std::vector<std::int32_t> chosen;
  for (std::int32_t r : present)
    if (r < kTraceFirstRanks) chosen.push_back(r);
  const std::int32_t critical = sim::summarize(graph, timeline).critical_rank.rank;
  if (!std::binary_search(chosen.begin(), chosen.end(), critical)) chosen.push_back(critical);
  context.err << fmt::format(
      "moeplan: note: {} has {} ranks; its trace draws ranks {} ({}: the critical rank); --trace-ranks chooses\n",
      schedule, present.size(), rank_list_text(chosen), critical);
  return chosen;
}

// `stages`: the graph is a pipeline whose ranks are its stages (folding): one SVG lane per stage.
void write_pictures(const SimulateOptions& o, const std::string& scenario, const dag::TaskGraph& graph,
                    const sim::Timeline& timeline, const std::string& schedule, bool several, bool stages,
                    CliContext& context) {
  if (o.trace.empty() && o.svg.empty()) return;
  const std::vector<std::int32_t> ranks = trace_ranks(o, graph, timeline, schedule, context);
  if (!o.trace.empty())
    context.outputs.add(output_name(o.trace, schedule, several), output::ChromeTraceWriter(ranks).write(graph, timeline));
  if (!o.svg.empty())
    context.outputs.add(
        output_name(o.svg, schedule, several),
        output::SvgGanttWriter(ranks).with_caption(scenario, schedule).with_stage_lanes(stages).write(graph, timeline));
}

void run_simulate(const SimulateOptions& o, CliContext& context) {
  check_stdout_outputs(o.json, {{"--trace", o.trace}, {"--svg", o.svg}});
  if (!o.trace_ranks.empty()) {
    if (o.trace.empty() && o.svg.empty())
      throw Error(ErrorKind::Input, "--trace-ranks: chooses the ranks of --trace and --svg; give one of them");
    parse_rank_list(o.trace_ranks);  // a malformed list is refused before anything runs
  }
  const plan::ScenarioRun run(with_max_memory(io::load_scenario_or_plan(o.scenario, parse_overrides(o.sets)), o.max_memory_gib));
  plan::SimulateRequest request;
  if (!o.schedule.empty()) request.schedule = o.schedule;
  request.degree = o.degree;
  request.threads = thread_count(o.threads, context.err);
  // Every schedule is built and run on its own; results are collected by index,
  // so the output does not depend on the thread count.
  request.keep_graphs = !o.trace.empty() || !o.svg.empty();
  const plan::Simulation sim = plan::simulate(run, request);
  for (const std::string& note : sim.notes) print_note(context.err, note);
  if (sim.mapping) {
    // The scenario's own mapping: the trace shows its pipeline (one process per stage).
    const plan::MappingTrace& trace = *sim.mapping_trace;
    write_pictures(o, run.spec().name, trace.built.graph, trace.timeline, trace.built.schedule, false, true, context);
  } else {
    const bool several = sim.schedules.size() > 1;
    for (const auto& [option, path] : {std::pair{"--trace", o.trace}, std::pair{"--svg", o.svg}})
      if (several && path == "-")
        throw Error(ErrorKind::Input,
                    fmt::format("{} -: several schedules write one file each (NAME.<schedule>.EXT); name a file", option));
    note_threads_started(request.threads, sim.threads_started, sim.schedules.size(), context.err);
    for (const plan::SimulatedSchedule& r : sim.schedules)
      if (r.built)
        write_pictures(o, run.spec().name, r.built->graph, r.timeline, r.built->schedule, several, false, context);
  }
  // The scenario's mapping against its GPU's memory (docs/cost-model.md, "Memory"), said, never hidden,
  // for every family.
  if (const std::string note = run.memory_note(); !note.empty()) print_note(context.err, note);
  if (o.json) {
    // One object for one schedule; an array for --schedule all (CLI.md).
    context.out << output::simulation_to_json(run, sim).dump() << '\n';
    return;
  }
  context.out << output::simulation_to_text(run, sim);
}

}  // namespace

void add_simulate_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one training iteration (forward + backward) of a scenario");
  cmd->add_option("scenario", o->scenario, "Scenario (bundled name or path)")->required();
  cmd->add_option("--schedule", o->schedule, "A schedule name, or all (default: the scenario's)");
  add_number_option(cmd, "request.degree", o->degree,
                    "Overlap degree: FoldMoE d, FSMoE r (both phases), FlowMoE R (default: the scenario's, else 4, "
                    "FSMoE's planned degrees, 2)");
  cmd->add_option("--set", o->sets, "Override a scalar field: field.path=value (repeatable)");
  cmd->add_option("--trace", o->trace, "Write a Chrome Trace Event JSON (pid = rank, tid = stream; - for stdout)");
  cmd->add_option("--svg", o->svg, "Write an SVG Gantt chart (- for stdout)");
  cmd->add_option("--trace-ranks", o->trace_ranks,
                  "Ranks --trace and --svg draw, e.g. 0,7,12-15 (default: all up to 64 ranks, else 0-7 and the "
                  "critical rank)");
  add_threads_option(cmd, o->threads);
  add_max_memory_option(cmd, o->max_memory_gib);
  cmd->add_flag("--json", o->json, "Print JSON: one object, or an array with --schedule all");
  cmd->callback([o, &context] { run_simulate(*o, context); });
}

}  // namespace moeplan::cli
