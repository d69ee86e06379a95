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
#include <moeplan/plan/simulate.hpp>
#include <moeplan/report/plan_report.hpp>
#include <moeplan/report/simulation_report.hpp>
#include <moeplan/io/timeline_writer.hpp>
#include <moeplan/plan/scenario_run.hpp>
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
    context.outputs.add(output_name(o.trace, schedule, several), io::ChromeTraceWriter(ranks).write(graph, timeline));
  if (!o.svg.empty())
    context.outputs.add(
        output_name(o.svg, schedule, several),
        io::SvgGanttWriter(ranks).with_caption(scenario, schedule).with_stage_lanes(stages).write(graph, timeline));
}

// A folding scenario: its own mapping, priced as the planner prices every
// mapping; the trace shows its pipeline (one process per stage).
void run_folding_simulate(const SimulateOptions& o, const plan::ScenarioRun& run, CliContext& context) {
  // Options that choose an overlap schedule cannot act on a folding scenario.
  if (!o.schedule.empty())
    throw Error(ErrorKind::Input,
                "--schedule: a folding scenario has no overlap schedule (the option applies to foldmoe, fsmoe and "
                "flowmoe scenarios); its pipeline follows parallelism.pp and parallelism.vpp");
  if (o.degree)
    throw Error(ErrorKind::Input,
                "--degree: applies to foldmoe, fsmoe and flowmoe scenarios; a folding scenario's pipeline degree is "
                "parallelism.pp");
  plan::FoldingTrace trace;
  const plan::FoldingResult r = run.price_own_mapping(&trace);
  write_pictures(o, run.spec().name, trace.built.graph, trace.timeline, trace.built.schedule, false, true, context);
  if (o.json) {
    context.out << report::folding_simulation_to_json(run.spec().name, r, trace).dump() << '\n';
    return;
  }
  context.out << fmt::format("{}: {:.1f} ms per iteration, MFU {:.1f}%, {:.1f} GiB per GPU{}\n", run.spec().name,
                             r.iteration_ms, 100 * r.mfu, r.memory_bytes_per_gpu / (1024.0 * 1024 * 1024),
                             r.fits ? "" : " (does not fit)");
}

// How much longer `ms` is than `reference`, in percent (0 for an empty reference).
double percent_over(double ms, double reference) { return reference > 0 ? 100 * (ms / reference - 1) : 0.0; }

void run_simulate(const SimulateOptions& o, CliContext& context) {
  check_stdout_outputs(o.json, {{"--trace", o.trace}, {"--svg", o.svg}});
  if (!o.trace_ranks.empty()) {
    if (o.trace.empty() && o.svg.empty())
      throw Error(ErrorKind::Input, "--trace-ranks: chooses the ranks of --trace and --svg; give one of them");
    parse_rank_list(o.trace_ranks);  // a malformed list is refused before anything runs
  }
  const plan::ScenarioRun run(with_max_memory(io::load_scenario_or_plan(o.scenario, parse_overrides(o.sets)), o.max_memory_gib));
  if (run.spec().schedule.family == "folding") {
    run_folding_simulate(o, run, context);
    return;
  }
  const std::string requested = o.schedule.empty() ? run.spec().schedule.name : o.schedule;
  const std::vector<std::string> schedules = runnable_schedules(run, requested, context.err);
  const bool several = schedules.size() > 1;
  for (const auto& [option, path] : {std::pair{"--trace", o.trace}, std::pair{"--svg", o.svg}})
    if (several && path == "-")
      throw Error(ErrorKind::Input,
                  fmt::format("{} -: several schedules write one file each (NAME.<schedule>.EXT); name a file", option));
  // Every schedule is built and run on its own; results are collected by index,
  // so the output does not depend on the thread count.
  const bool pictures = !o.trace.empty() || !o.svg.empty();
  const unsigned threads = thread_count(o.threads, context.err);
  unsigned started = 0;
  const std::vector<plan::SimulatedSchedule> results =
      plan::simulate_schedules(run, schedules, o.degree, threads, pictures, &started);
  note_threads_started(threads, started, schedules.size(), context.err);
  for (const plan::SimulatedSchedule& r : results)
    if (r.built)
      write_pictures(o, run.spec().name, r.built->graph, r.timeline, r.built->schedule, several, false, context);
  // The scenario's mapping against its GPU's memory (docs/cost-model.md, "Memory"), said, never hidden.
  if (!run.fits_in_memory())
    context.err << fmt::format(
        "moeplan: note: {} needs {:.1f} GiB per GPU, more than the {:.0f} GiB GPU holds less its 10% reserve: these "
        "times are for a run that would not fit\n",
        run.spec().name, run.memory_bytes_per_gpu() / (1024.0 * 1024 * 1024),
        run.spec().cluster.gpu.memory_bytes / (1024.0 * 1024 * 1024));
  if (o.json) {
    // One object for one schedule; an array for --schedule all (CLI.md).
    context.out << report::simulation_to_json(run, results, requested == "all").dump() << '\n';
    return;
  }
  for (const plan::SimulatedSchedule& r : results) {
    const plan::Evaluation& e = r.evaluation;
    context.out << fmt::format(
        "{:<14} d={:<3} iteration {:9.3f} ms  forward {:9.3f}  backward {:9.3f}  exposed comm "
        "{:8.3f}  bubbles {:8.3f}  tasks {}\n",
        e.schedule, e.degree, e.iteration_ms, e.forward_ms, e.backward_ms, e.exposed_comm_ms, e.bubble_ms, e.tasks);
    if (const auto& n = r.noise)
      context.out << fmt::format(
          "{:<14} noise cv {:g} over {} seeds: mean {:.3f} ms ({:+.1f}%), p95 {:.3f} ms ({:+.1f}%), range {:.3f}..{:.3f}\n",
          "", n->compute_jitter_cv, n->seeds, n->mean_ms, percent_over(n->mean_ms, e.iteration_ms), n->p95_ms,
          percent_over(n->p95_ms, e.iteration_ms), n->min_ms, n->max_ms);
    if (e.routing) {
      const plan::RoutingReport& routed = *e.routing;
      const std::size_t slowest = static_cast<std::size_t>(routed.slowest_rank);
      context.out << fmt::format(
          "  routing {}: {:.2f}% of token slots dropped; slowest rank {} (its AlltoAlls {:.3f} ms of {} ranks drawn)\n"
          "  priced: {}\n",
          routed.routing, 100 * routed.dropped_token_fraction, routed.slowest_rank,
          slowest < routed.per_rank_a2a_ms.size() ? routed.per_rank_a2a_ms[slowest] : 0.0,
          routed.per_rank_a2a_ms.size(), routed.priced);
    }
  }
}

}  // namespace

void add_simulate_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one training iteration (forward + backward) of a scenario");
  cmd->add_option("scenario", o->scenario, "Scenario (bundled name or path)")->required();
  cmd->add_option("--schedule", o->schedule, "A schedule name, or all (default: the scenario's)");
  cmd->add_option("--degree", o->degree,
                  "Overlap degree: FoldMoE d, FSMoE r (both phases), FlowMoE R (default: the scenario's, else 4, "
                  "FSMoE's planned degrees, 2)")
      ->check(positive());
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
