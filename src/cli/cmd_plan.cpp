// moeplan plan SCENARIO [--schedule NAME|all] [--set k=v]... [-o PLAN] [--json]

#include <algorithm>
#include <cmath>
#include <ostream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/plan_writer.hpp>
#include <moeplan/plan/flowmoe_planner.hpp>
#include <moeplan/plan/folding.hpp>
#include <moeplan/plan/foldmoe_planner.hpp>
#include <moeplan/plan/plausibility.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/plan/sweep.hpp>

#include "cli_context.hpp"
#include "scenario_support.hpp"

namespace moeplan::cli {
namespace {

struct PlanOptions {
  std::string scenario;
  std::string schedule = "all";
  std::vector<std::string> sets;
  std::string output;
  unsigned threads = 0;
  double max_memory_gib = 8;  // set by add_max_memory_option
  bool json = false;
};

// The plan header every family shares: the chosen schedule against a baseline.
model::PlanSpec plan_header(const std::string& scenario, const std::string& schedule, double iteration_ms,
                            double baseline_ms) {
  model::PlanSpec spec;
  spec.scenario = scenario;
  spec.schedule = schedule;
  spec.iteration_ms = iteration_ms;
  spec.baseline_ms = baseline_ms;
  spec.speedup = baseline_ms > 0 ? baseline_ms / iteration_ms : 0.0;
  if (baseline_ms > 0) plan::check_plausible_speedup(spec.speedup, "plan speedup");
  return spec;
}

// What the plan file carries besides the choice: how to rebuild the run
// (io/plan_reader.hpp), so that `simulate PLAN` reproduces it.
void write_plan_file(const PlanOptions& o, model::PlanSpec spec, const model::ScenarioSpec& scenario,
                     CliContext& context) {
  const std::string& output = o.output;
  if (output.empty()) return;
  spec.scenario_ref = o.scenario;
  spec.scenario_overrides = o.sets;
  spec.family = scenario.schedule.family;
  const bool as_json = output.size() >= 5 && output.compare(output.size() - 5, 5, ".json") == 0;
  context.outputs.add(output, as_json ? io::plan_to_json(spec).dump() + "\n" : io::plan_to_textproto(spec));
}

// FSMoE: the closed-form degrees and gradient partition, and the six schedules on the engine.
void run_fsmoe_plan(const PlanOptions& o, const plan::ScenarioRun& run, const std::vector<std::string>& schedules,
                    CliContext& context) {
  const plan::FsMoePlan p =
      plan::plan_fsmoe(run.spec(), run.costs(), plan::family_schedules("fsmoe"), thread_count(o.threads, context.err));
  note_threads_started(p.threads, context.err);
  const std::vector<plan::Evaluation>& evaluations = p.schedules;
  auto find = [&](const std::string& name) -> const plan::Evaluation& {
    for (const plan::Evaluation& e : evaluations)
      if (e.schedule == name) return e;
    return evaluations.front();
  };
  const plan::Evaluation* best = nullptr;
  for (const plan::Evaluation& e : evaluations)
    if (std::find(schedules.begin(), schedules.end(), e.schedule) != schedules.end() &&
        (best == nullptr || e.iteration_ms < best->iteration_ms))
      best = &e;
  const double none_ms = find("none").iteration_ms;
  const double tutel_ms = find("tutel").iteration_ms;
  model::PlanSpec spec = plan_header(run.spec().name, best->schedule, best->iteration_ms, none_ms);
  // FSMoE's own knobs (the degrees and partition its closed forms choose).
  spec.knobs.degree_forward = p.degrees.forward.r;
  spec.knobs.degree_backward = p.degrees.backward.r;
  for (std::size_t i = 0; i < p.partition.during_moe_bytes.size(); ++i)
    spec.knobs.grad_partition_bytes.push_back(
        static_cast<std::int64_t>(std::llround(p.partition.during_moe_bytes[i] + p.partition.during_dense_bytes[i])));
  write_plan_file(o, spec, run.spec(), context);
  if (o.json) {
    io::Json doc = io::plan_to_json(spec);
    doc.set("tutel_ms", tutel_ms);
    doc.set("memory_bytes_per_gpu", run.memory_bytes_per_gpu());
    doc.set("fits", run.fits_in_memory());
    doc.set("speedup_vs_tutel", tutel_ms / spec.iteration_ms);
    io::Json knobs = io::knobs_to_json(spec.knobs);
    io::Json per_layer = io::Json::array();
    for (std::int64_t r : p.partition.degree_backward) per_layer.push(r);
    knobs.set("degree_backward_per_layer", per_layer);
    knobs.set("tutel_degree", p.tutel_degree);
    knobs.set("grad_tail_bytes", p.partition.tail_bytes);
    doc.set("knobs", knobs);
    io::Json closed = io::Json::object();
    closed.set("case_forward", plan::to_string(p.degrees.forward.which));
    closed.set("t_moe_forward_ms", p.degrees.forward.t_moe_ms);
    closed.set("case_backward", plan::to_string(p.degrees.backward.which));
    closed.set("t_moe_backward_ms", p.degrees.backward.t_moe_ms);
    closed.set("overlap_gap_ms", p.overlap_gap_ms);
    doc.set("closed_form", closed);
    io::Json all = io::Json::array();
    for (const plan::Evaluation& e : evaluations) {
      io::Json entry = evaluation_to_json(spec.scenario, e);
      entry.set("speedup_vs_none", none_ms / e.iteration_ms);
      entry.set("speedup_vs_tutel", tutel_ms / e.iteration_ms);
      all.push(std::move(entry));
    }
    doc.set("schedules", all);
    context.out << doc.dump() << '\n';
    return;
  }
  context.out << fmt::format("plan for {}: {} ({:.3f} ms per iteration), {:.3f}x over none, {:.3f}x over tutel\n",
                             spec.scenario, spec.schedule, spec.iteration_ms, spec.speedup,
                             tutel_ms / spec.iteration_ms);
  context.out << fmt::format(
      "  FSMoE degrees: forward r = {} ({}, {:.3f} ms per MoE layer), backward r = {} ({}, "
      "{:.3f} ms); Tutel's adaptive r = {}\n",
      p.degrees.forward.r, plan::to_string(p.degrees.forward.which), p.degrees.forward.t_moe_ms, p.degrees.backward.r,
      plan::to_string(p.degrees.backward.which), p.degrees.backward.t_moe_ms, p.tutel_degree);
  double hidden = 0;
  for (std::int64_t b : spec.knobs.grad_partition_bytes) hidden += static_cast<double>(b);
  context.out << fmt::format(
      "  gradient partition: {:.1f} MB overlapped with layers, {:.1f} MB after backward; "
      "overlap gap t_olp,moe {:.3f} ms\n",
      hidden / 1e6, p.partition.tail_bytes / 1e6, p.overlap_gap_ms);
  for (const plan::Evaluation& e : evaluations)
    context.out << fmt::format("  {:<14} {:10.3f} ms  ({:.3f}x vs none, {:.3f}x vs tutel)\n", e.schedule,
                               e.iteration_ms, none_ms / e.iteration_ms, tutel_ms / e.iteration_ms);
  if (!o.output.empty()) context.out << "  wrote " << o.output << '\n';
}

// FlowMoE: R jointly with Sp (Bayesian optimisation), every schedule at its best knobs.
void run_flowmoe_plan(const PlanOptions& o, const plan::ScenarioRun& run, const std::vector<std::string>& schedules,
                      CliContext& context) {
  const std::vector<std::string>& all = plan::family_schedules("flowmoe");
  const plan::FlowMoePlan p =
      plan::plan_flowmoe(run.spec(), run.costs(), all, {}, thread_count(o.threads, context.err));
  note_threads_started(p.threads, context.err);
  auto index_of = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(all.begin(), all.end(), name) - all.begin());
  };
  std::size_t best = p.schedules.size();
  for (const std::string& name : schedules) {
    const std::size_t i = index_of(name);
    if (best == p.schedules.size() || p.schedules[i].best.iteration_ms < p.schedules[best].best.iteration_ms) best = i;
  }
  const plan::FlowMoeChoice& chosen = p.schedules[best];
  const double none_ms = p.schedules[index_of("none")].best.iteration_ms;
  const double tutel_ms = p.schedules[index_of("tutel")].best.iteration_ms;
  model::PlanSpec spec = plan_header(run.spec().name, chosen.best.schedule, chosen.best.iteration_ms, none_ms);
  spec.knobs.degree = chosen.best.degree;
  if (chosen.ar_chunk_bytes > 0) spec.knobs.ar_chunk_bytes = chosen.ar_chunk_bytes;
  write_plan_file(o, spec, run.spec(), context);
  // The BO trace of the flowmoe schedule (the paper's tuner), whichever schedule won.
  const plan::FlowMoeChoice& flow = p.schedules[index_of("flowmoe")];
  if (o.json) {
    io::Json doc = io::plan_to_json(spec);
    doc.set("tutel_ms", tutel_ms);
    doc.set("memory_bytes_per_gpu", run.memory_bytes_per_gpu());
    doc.set("fits", run.fits_in_memory());
    doc.set("speedup_vs_tutel", tutel_ms / spec.iteration_ms);
    io::Json trace = io::Json::array();
    for (const plan::TunerSample& sample : flow.tuning.trace) {
      io::Json point = io::Json::object();
      point.set("ar_chunk_bytes", sample.chunk_bytes);
      point.set("iteration_ms", sample.iteration_ms);
      trace.push(std::move(point));
    }
    io::Json bo = io::Json::object();
    bo.set("schedule", "flowmoe");
    bo.set("degree", flow.best.degree);
    bo.set("best_ar_chunk_bytes", flow.ar_chunk_bytes);
    bo.set("samples", trace);
    doc.set("bo_trace", bo);
    io::Json list = io::Json::array();
    for (const plan::FlowMoeChoice& c : p.schedules) {
      io::Json entry = evaluation_to_json(spec.scenario, c.best);
      if (c.ar_chunk_bytes > 0) entry.set("ar_chunk_bytes", c.ar_chunk_bytes);
      entry.set("speedup_vs_none", none_ms / c.best.iteration_ms);
      entry.set("speedup_vs_tutel", tutel_ms / c.best.iteration_ms);
      list.push(std::move(entry));
    }
    doc.set("schedules", list);
    context.out << doc.dump() << '\n';
    return;
  }
  context.out << fmt::format(
      "plan for {}: {} with R = {}{}: {:.3f} ms per iteration, {:.3f}x over none, {:.3f}x over "
      "tutel\n",
      spec.scenario, spec.schedule, *spec.knobs.degree,
      chosen.ar_chunk_bytes > 0 ? fmt::format(", Sp = {} bytes", chosen.ar_chunk_bytes) : "", spec.iteration_ms,
      spec.speedup, tutel_ms / spec.iteration_ms);
  context.out << "  BO samples (Sp bytes -> ms):";
  for (const plan::TunerSample& sample : flow.tuning.trace)
    context.out << fmt::format(" {}->{:.2f}", sample.chunk_bytes, sample.iteration_ms);
  context.out << '\n';
  for (const plan::FlowMoeChoice& c : p.schedules)
    context.out << fmt::format("  {:<11} R = {:<2} {:10.3f} ms  ({:.3f}x vs none)\n", c.best.schedule, c.best.degree,
                               c.best.iteration_ms, none_ms / c.best.iteration_ms);
  if (!o.output.empty()) context.out << "  wrote " << o.output << '\n';
}

io::Json folding_json(const plan::FoldingResult& r) {
  io::Json j = io::Json::object();
  io::Json par = io::parallelism_to_json(r.config.parallel_spec());
  par.set("micro_batch_size", r.config.micro_batch);
  j.set("parallelism", par);
  j.set("iteration_ms", r.iteration_ms);
  j.set("mfu", r.mfu);
  j.set("memory_bytes_per_gpu", r.memory_bytes_per_gpu);
  j.set("fits", r.fits);
  io::Json b = io::Json::object();
  b.set("attention_ms", r.breakdown.attention_ms);
  b.set("moe_compute_ms", r.breakdown.moe_compute_ms);
  b.set("a2a_ms", r.breakdown.a2a_ms);
  b.set("agrs_ms", r.breakdown.agrs_ms);
  b.set("dp_ms", r.breakdown.dp_ms);
  b.set("pp_bubble_ms", r.breakdown.pp_bubble_ms);
  j.set("breakdown", b);
  return j;
}

// MoE Parallel Folding: the best folded and coupled mappings that fit in memory.
void run_folding_plan(const PlanOptions& o, const plan::ScenarioRun& run, CliContext& context) {
  if (o.schedule != "all")
    throw Error(ErrorKind::Input,
                "--schedule: a folding scenario has no overlap schedule (the option applies to foldmoe, fsmoe and "
                "flowmoe scenarios); plan searches its mappings");
  const unsigned threads = thread_count(o.threads, context.err);
  ThreadsStarted started;
  const std::vector<plan::FoldingResult> folded =
      plan::search_mappings(run.spec(), run.costs(), "folded", threads, &started);
  const std::vector<plan::FoldingResult> coupled =
      plan::search_mappings(run.spec(), run.costs(), "coupled", threads, &started);
  note_threads_started(started, context.err);
  if (folded.empty() || !folded.front().fits)
    throw Error(ErrorKind::Runtime, fmt::format("no mapping of {} fits in GPU memory", run.spec().name));
  const plan::FoldingResult& best = folded.front();
  const bool coupled_fits = !coupled.empty() && coupled.front().fits;
  model::PlanSpec spec =
      plan_header(run.spec().name, "folded", best.iteration_ms, coupled_fits ? coupled.front().iteration_ms : 0.0);
  spec.knobs.parallelism = best.config.parallel_spec();
  spec.knobs.micro_batch_size = best.config.micro_batch;
  write_plan_file(o, spec, run.spec(), context);
  if (o.json) {
    io::Json doc = io::plan_to_json(spec);
    io::Json knobs = io::knobs_to_json(spec.knobs);
    knobs.set("micro_batch_size", best.config.micro_batch);
    doc.set("knobs", knobs);
    doc.set("mfu", best.mfu);
    doc.set("memory_bytes_per_gpu", best.memory_bytes_per_gpu);
    doc.set("folded", folding_json(best));
    doc.set("coupled", coupled_fits ? folding_json(coupled.front()) : io::Json(nullptr));
    io::Json top = io::Json::array();
    for (std::size_t i = 0; i < folded.size() && i < 10 && folded[i].fits; ++i) top.push(folding_json(folded[i]));
    doc.set("top10", top);
    doc.set("mappings_searched", static_cast<std::int64_t>(folded.size() + coupled.size()));
    context.out << doc.dump() << '\n';
    return;
  }
  auto line = [](const plan::FoldingResult& r) {
    return fmt::format(
        "tp {} cp {} pp {} vpp {} ep {} etp {} (dp {} edp {}) mb {}: {:.1f} ms, MFU {:.1f}%, {:.1f} GiB "
        "per GPU",
        r.config.tp, r.config.cp, r.config.pp, r.config.vpp, r.config.ep, r.config.etp, r.config.dp, r.config.edp,
        r.config.micro_batch, r.iteration_ms, 100 * r.mfu, r.memory_bytes_per_gpu / (1024.0 * 1024 * 1024));
  };
  context.out << "plan for " << spec.scenario << '\n';
  context.out << "  folded:  " << line(best) << '\n';
  if (coupled_fits)
    context.out << "  coupled: " << line(coupled.front()) << '\n';
  else
    context.out << "  coupled: no mapping fits\n";
  if (!o.output.empty()) context.out << "  wrote " << o.output << '\n';
}

void run_plan(const PlanOptions& o, CliContext& context) {
  check_stdout_outputs(o.json, {{"-o", o.output}});
  const plan::ScenarioRun run(with_max_memory(io::load_scenario(o.scenario, parse_overrides(o.sets)), o.max_memory_gib));
  refuse_noise(run.spec(), "plan");
  if (run.spec().schedule.family == "folding") {
    run_folding_plan(o, run, context);
    return;
  }
  // The scenario fixes the mapping (only folding searches mappings): say when it
  // does not fit its GPU's memory (docs/cost-model.md, "Memory").
  if (!run.fits_in_memory())
    context.err << fmt::format(
        "moeplan: note: {} needs {:.1f} GiB per GPU, more than the {:.0f} GiB GPU holds less its 10% reserve: the "
        "plan is for a run that would not fit\n",
        run.spec().name, run.memory_bytes_per_gpu() / (1024.0 * 1024 * 1024),
        run.spec().cluster.gpu.memory_bytes / (1024.0 * 1024 * 1024));
  std::vector<std::string> schedules;
  for (const plan::RequestedSchedule& r : run.schedules(o.schedule)) {
    if (r.skipped_because) {
      context.err << fmt::format("moeplan: note: {} skipped: {}\n", r.name, *r.skipped_because);
      continue;
    }
    schedules.push_back(r.name);
  }
  if (run.spec().schedule.family == "flowmoe") {
    run_flowmoe_plan(o, run, schedules, context);
    return;
  }
  if (run.spec().schedule.family == "fsmoe") {
    run_fsmoe_plan(o, run, schedules, context);
    return;
  }
  // The baselines are always evaluated so speed-ups can be reported.
  std::vector<std::string> searched{"none", "tutel"};
  for (const std::string& s : schedules)
    if (s != "none" && s != "tutel") searched.push_back(s);
  const plan::FoldMoePlan result =
      plan::plan_foldmoe(run.spec(), run.costs(), searched, 32, thread_count(o.threads, context.err));
  note_threads_started(result.threads, context.err);
  // The best among the requested schedules.
  std::size_t best = result.schedules.size();
  for (std::size_t i = 0; i < result.schedules.size(); ++i) {
    const bool requested =
        std::find(schedules.begin(), schedules.end(), result.schedules[i].best.schedule) != schedules.end();
    if (requested && (best == result.schedules.size() ||
                      result.schedules[i].best.iteration_ms < result.schedules[best].best.iteration_ms))
      best = i;
  }
  const plan::ScheduleChoice& chosen = result.schedules[best];
  const double none_ms = result.schedules[0].best.iteration_ms;
  const double tutel_ms = result.schedules[1].best.iteration_ms;
  model::PlanSpec spec = plan_header(run.spec().name, chosen.best.schedule, chosen.best.iteration_ms, none_ms);
  spec.knobs.degree = chosen.best.degree;
  spec.knobs.slicing_tokens = chosen.slicing_tokens;
  write_plan_file(o, spec, run.spec(), context);
  if (o.json) {
    io::Json doc = io::plan_to_json(spec);
    doc.set("tutel_ms", tutel_ms);
    doc.set("memory_bytes_per_gpu", run.memory_bytes_per_gpu());
    doc.set("fits", run.fits_in_memory());
    doc.set("speedup_vs_tutel", tutel_ms / spec.iteration_ms);
    io::Json knobs = io::knobs_to_json(spec.knobs);
    knobs.set("slicing_scheme", chosen.best.schedule == "1a1m-uniform" ? "time-uniform"
                                : chosen.slicing_tokens.empty()        ? "none"
                                                                       : "token-uniform");
    doc.set("knobs", knobs);
    doc.set("a2a_critical_ms", chosen.best.a2a_critical_ms);
    doc.set("a2a_total_ms", chosen.best.a2a_total_ms);
    io::Json all = io::Json::array();
    for (const plan::ScheduleChoice& c : result.schedules) {
      io::Json entry = evaluation_to_json(spec.scenario, c.best);
      entry.set("speedup_vs_none", none_ms / c.best.iteration_ms);
      entry.set("speedup_vs_tutel", tutel_ms / c.best.iteration_ms);
      io::Json tried = io::Json::array();
      for (const auto& [d, ms] : c.tried) tried.push(io::Json(io::Json::Array{io::Json(d), io::Json(ms)}));
      entry.set("degrees_tried", tried);
      all.push(std::move(entry));
    }
    doc.set("schedules", all);
    context.out << doc.dump() << '\n';
    return;
  }
  context.out << fmt::format("plan for {}: {} with d = {}: {:.3f} ms per iteration\n", spec.scenario, spec.schedule,
                             *spec.knobs.degree, spec.iteration_ms);
  context.out << fmt::format("  speed-up {:.3f}x over none ({:.3f} ms), {:.3f}x over tutel ({:.3f} ms)\n", spec.speedup,
                             none_ms, tutel_ms / spec.iteration_ms, tutel_ms);
  if (!chosen.slicing_tokens.empty()) {
    std::string slices;
    for (std::int64_t t : chosen.slicing_tokens) slices += fmt::format("{}{}", slices.empty() ? "" : " ", t);
    context.out << "  attention slices (tokens): " << slices << '\n';
  }
  context.out << fmt::format("  AlltoAll on the critical path {:.3f} ms of {:.3f} ms\n", chosen.best.a2a_critical_ms,
                             chosen.best.a2a_total_ms);
  for (const plan::ScheduleChoice& c : result.schedules)
    context.out << fmt::format("  {:<14} best d = {:<3} {:9.3f} ms  ({:.3f}x vs none)\n", c.best.schedule,
                               c.best.degree, c.best.iteration_ms, none_ms / c.best.iteration_ms);
  if (!o.output.empty()) context.out << "  wrote " << o.output << '\n';
}

}  // namespace

void add_plan_command(CLI::App& app, CliContext& context) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "Search the scenario's open knobs and write the best plan");
  cmd->add_option("scenario", o->scenario, "Scenario (bundled name or path)")->required();
  cmd->add_option("--schedule", o->schedule, "A schedule name, or all (default)");
  cmd->add_option("--set", o->sets, "Override a scalar field: field.path=value (repeatable)");
  cmd->add_option("-o,--output", o->output, "Write the plan (text format, or JSON for a .json name; - for stdout)");
  add_threads_option(cmd, o->threads);
  add_max_memory_option(cmd, o->max_memory_gib);
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o, &context] { run_plan(*o, context); });
}

}  // namespace moeplan::cli
