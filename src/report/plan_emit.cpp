#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/report/plan_report.hpp>

namespace moeplan::report {

std::string emit_megatron(const plan::PlanResult& r, const model::ScenarioSpec& scenario) {
  if (r.family != "folding" && r.family != "joint")
    throw Error(ErrorKind::Input,
                fmt::format("--emit megatron: applies to folding scenarios (a mapping); {} is a {} scenario: use "
                            "--emit knobs",
                            r.scenario, r.family));
  const model::ParallelSpec& p = *r.chosen.knobs.parallelism;
  // Megatron-LM's training arguments (megatron/training/arguments.py); the
  // mapping's data-parallel sizes (dp, edp) follow from the world size.
  std::string out = fmt::format(
      "--tensor-model-parallel-size {} --pipeline-model-parallel-size {} --context-parallel-size {} "
      "--expert-model-parallel-size {} --expert-tensor-parallel-size {}",
      p.tp, p.pp, p.cp, p.ep, p.etp);
  if (p.vpp > 1)
    out += fmt::format(" --num-layers-per-virtual-pipeline-stage {}", scenario.model.num_layers / (p.pp * p.vpp));
  if (p.sequence_parallel) out += " --sequence-parallel";
  out += fmt::format(" --micro-batch-size {} --global-batch-size {} --seq-length {}",
                     r.chosen.knobs.micro_batch_size.value_or(scenario.workload.micro_batch_size),
                     scenario.workload.global_batch_size, scenario.workload.seq_len);
  // What the cost model assumed (docs/cost-model.md, "MoE Parallel Folding").
  out += " --use-distributed-optimizer --moe-token-dispatcher-type alltoall";
  if (scenario.schedule.recompute == "selective") out += " --recompute-granularity selective";
  if (scenario.schedule.recompute == "full")
    out += " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  out += '\n';
  out += fmt::format(
      "# assumed by the plan: rank order {} (Megatron-Core's default is tp-cp-ep-dp-pp); the distributed "
      "optimizer's ReduceScatter and AllGather run after the pipeline drains (no --overlap-grad-reduce, no "
      "--overlap-param-gather); context-parallel ring exchanges hidden under attention; dp {} edp {}; "
      "{} ms per iteration, MFU {:.1f}%\n",
      p.order, p.dp, p.edp, r.chosen.iteration_ms, 100 * r.chosen.mfu.value_or(0));
  if (r.family == "joint" && r.chosen.schedule != "none")
    out += fmt::format(
        "# the plan's time assumes overlap schedule {} ({}), which is not a Megatron-LM option: without it the "
        "mapping above runs {} ms per iteration\n",
        r.chosen.schedule, r.chosen.knobs.degree ? fmt::format("degree {}", *r.chosen.knobs.degree)
                                                 : fmt::format("r {} forward, {} backward",
                                                               r.chosen.knobs.degree_forward.value_or(0),
                                                               r.chosen.knobs.degree_backward.value_or(0)),
        std::get<plan::JointSearch>(r.search).best().no_overlap_ms);
  return out;
}

std::string emit_knobs(const plan::PlanResult& r) {
  const model::PlanKnobs& k = r.chosen.knobs;
  std::string out = fmt::format("# {} plan for {}: {} ms per iteration\nschedule={}\n", r.family, r.scenario,
                                r.chosen.iteration_ms, r.chosen.schedule);
  auto list = [](const std::vector<std::int64_t>& v) {
    std::string s;
    for (std::int64_t x : v) s += fmt::format("{}{}", s.empty() ? "" : ",", x);
    return s;
  };
  if (r.family == "foldmoe") {
    // Tutel's moe_layer argument for the overlap degree d (FoldMoE reuses it).
    out += fmt::format("a2a_ffn_overlap_degree={}\n", *k.degree);
    if (!k.slicing_tokens.empty()) out += fmt::format("attention_slice_tokens={}\n", list(k.slicing_tokens));
  } else if (r.family == "fsmoe") {
    // FSMoE's pipeline degree r per phase and section 5's gradient partition (bytes per layer, model order).
    out += fmt::format("r_forward={}\nr_backward={}\n", *k.degree_forward, *k.degree_backward);
    out += fmt::format("gradient_partition_bytes={}\n", list(k.grad_partition_bytes));
  } else if (r.family == "flowmoe") {
    // FlowMoE's pipelining degree R and all-reduce chunk size Sp (its code takes Sp in bytes).
    out += fmt::format("R={}\n", *k.degree);
    if (k.ar_chunk_bytes) out += fmt::format("Sp_bytes={}\n", *k.ar_chunk_bytes);
  } else {
    throw Error(ErrorKind::Input,
                fmt::format("--emit knobs: applies to foldmoe, fsmoe and flowmoe scenarios; {} is a folding scenario{}: "
                            "use --emit megatron",
                            r.scenario, r.family == "joint" ? " (a joint plan)" : ""));
  }
  return out;
}

}  // namespace moeplan::report
