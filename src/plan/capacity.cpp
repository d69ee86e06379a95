#include <moeplan/plan/capacity.hpp>

#include <cmath>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/memory.hpp>
#include <moeplan/plan/family_registry.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/plan/joint.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::plan {
namespace {

constexpr double kSecondsPerDay = 86400;
constexpr double kSecondsPerHour = 3600;
/// A bound is reported when relaxing it gains more than this: the model's own
/// error is larger than 1% (docs/validation.md), as plan's ties (report::kTieFraction).
constexpr double kBindingGain = 0.01;

CapacityPlan plan_of(const JointResult& j, const model::GpuSpec& gpu) {
  CapacityPlan p;
  p.mapping = j.priced.config;
  p.overlap = j.label();
  if (!j.overlap.none()) {
    p.degree_forward = j.degree_forward;
    p.degree_backward = j.degree_backward;
  }
  p.iteration_ms = j.priced.iteration_ms;
  p.no_overlap_ms = j.no_overlap_ms;
  p.mfu = j.priced.mfu;
  p.memory_bytes_per_gpu = j.priced.memory_bytes_per_gpu;
  p.memory_tight = cost::tight_in_memory(gpu, p.memory_bytes_per_gpu);
  p.precision = model::to_string(j.layers->precision);
  p.recompute = model::recompute_text(j.layers->recompute);
  return p;
}

std::string mapping_text(const cost::MappingConfig& c) {
  return fmt::format("tp {} cp {} pp {} vpp {} ep {} etp {} mb {}", c.tp, c.cp, c.pp, c.vpp, c.ep, c.etp,
                     c.micro_batch);
}

// What bound a row with a plan: the larger of the gains its two relaxations
// would give, when above kBindingGain. Memory: the fastest mapping, which
// does not fit, beats the plan even with no overlap. Global batch: the same
// plan at twice the batch (the same overlap per chunk and optimizer step)
// makes each token cheaper (the pipeline's bubble and the optimizer step
// spread over more micro-batches).
void bind(const CapacityRequest& request, const model::ScenarioSpec& s, const cost::CostModel& costs,
          const JointSearch& search, CapacityRow& row) {
  const JointResult& best = search.best();
  double memory_gain = 1.0;
  if (search.fastest && !search.fastest->fits && search.fastest->iteration_ms < best.priced.iteration_ms)
    memory_gain = best.priced.iteration_ms / search.fastest->iteration_ms;
  // The same mapping's prices at twice the batch: twice the micro-batches per
  // DP rank, each priced as before (a layer's cost does not depend on how many run).
  cost::LayerPrices doubled = *best.layers;
  doubled.micro_batches *= 2;
  const double doubled_ms = run_pipeline(doubled, costs, s.limits, &best.saved).iteration_ms;
  const double batch_gain = 2.0 * best.priced.iteration_ms / doubled_ms;
  // A recomputation chosen because a lighter one did not fit is memory's doing.
  if (best.priced.recompute_for_memory && memory_gain <= batch_gain) {
    row.bound_by = "memory";
    row.bound_detail = fmt::format("recompute {} chosen: {}", model::recompute_text(best.layers->recompute),
                                   best.priced.knob_choice);
    return;
  }
  if (std::max(memory_gain, batch_gain) <= 1.0 + kBindingGain) {
    row.bound_by = "none";
    row.bound_detail = "neither a mapping that does not fit nor twice the global batch gains more than 1%";
    return;
  }
  if (memory_gain >= batch_gain) {
    const MappingResult& f = *search.fastest;
    row.bound_by = "memory";
    row.bound_detail = fmt::format(
        "{} ({:.1f} GiB per GPU, more than the {:.1f} GiB usable) would be {:.1f}% faster even with no overlap",
        mapping_text(f.config), f.memory_bytes_per_gpu / kGiB, cost::usable_memory_bytes(request.cluster.gpu) / kGiB,
        100 * (memory_gain - 1));
    return;
  }
  row.bound_by = "global batch";
  row.bound_detail = fmt::format(
      "at twice the global batch ({} sequences) the same plan's tokens would cost {:.1f}% less (the pipeline's "
      "bubble and the optimizer step over more micro-batches)",
      2 * request.global_batch, 100 * (1 - 1 / batch_gain));
}

void check_whole_nodes(const CapacityRequest& r, std::int64_t gpus) {
  if (gpus < 1 || gpus % r.cluster.gpus_per_node != 0)
    throw Error(ErrorKind::Input, fmt::format("{} is not a whole number of {}-GPU nodes", gpus, r.cluster.gpus_per_node),
                "request.gpus");
}

}  // namespace

std::vector<std::int64_t> capacity_gpu_counts(std::int64_t lo, std::int64_t hi, std::int64_t gpn) {
  if (lo < 1 || hi < lo)
    throw Error(ErrorKind::Input, fmt::format("{}..{} is not a range of positive counts", lo, hi), "request.gpus");
  std::vector<std::int64_t> out;
  for (std::int64_t n = gpn; n <= hi; n *= 2)
    if (n >= lo) out.push_back(n);
  if (out.empty())
    throw Error(ErrorKind::Input,
                fmt::format("{}..{} holds no count of whole {}-GPU nodes times a power of two ({}, {}, {}, ...)", lo,
                            hi, gpn, gpn, 2 * gpn, 4 * gpn),
                "request.gpus");
  return out;
}

namespace {

// The profile must price the model's datatype: a GEMM line faster than the
// GPU's peak for the model's element size (fp32 for 4-byte elements, else
// BF16, or FP16 where the GPU has none) is a profile of another datatype, and
// would give iterations the GPU cannot run (and an MFU above 1).
void check_profile_datatype(const CapacityRequest& r) {
  const model::GpuSpec& gpu = r.cluster.gpu;
  const bool fp32 = r.model.dtype_bytes == 4;
  const double peak = fp32 ? gpu.peak_flops_per_s_fp32
                           : (gpu.peak_flops_per_s_bf16 > 0 ? gpu.peak_flops_per_s_bf16 : gpu.peak_flops_per_s_fp16);
  if (peak <= 0) return;  // the cluster file gives no peak to check against
  const double flops = 1e15;  // large enough that the line's startup does not count
  const double rate = flops / (cost::CostModel(r.profile).compute(model::OpClass::Gemm, flops).value / 1000.0);
  if (rate > peak * (1 + 1e-9))
    throw Error(ErrorKind::Input,
                fmt::format("{} prices GEMMs at {:.1f} TFLOP/s, above {}'s {} peak of {:.1f} TFLOP/s for {}'s "
                            "{}-byte elements: a profile of another datatype (`moeplan datasheet-profile {}` derives "
                            "one for {} elements)",
                            r.profile.name, rate / 1e12, gpu.name, fp32 ? "fp32" : "half-precision", peak / 1e12,
                            r.model.name, r.model.dtype_bytes, r.cluster.name, fp32 ? "fp32" : "half-precision"),
                "request.profile");
}

}  // namespace

void check_capacity_request(const CapacityRequest& r) {
  check_profile_datatype(r);
  if (r.days && !r.tokens)
    throw Error(ErrorKind::Input,
                fmt::format("a deadline needs a token budget ({}) to be met", option_ref("request.tokens")),
                "request.days");
  if (r.cost_per_gpu_hour && !r.tokens)
    throw Error(ErrorKind::Input, fmt::format("a cost needs a token budget ({}) to price", option_ref("request.tokens")),
                "request.cost_per_gpu_hour");
  for (std::int64_t g : r.gpus) check_whole_nodes(r, g);
}

model::ScenarioSpec capacity_scenario(const CapacityRequest& r, std::int64_t gpus) {
  model::ScenarioSpec s;
  s.name = fmt::format("{} on {} x {}", r.model.name, gpus, r.cluster.gpu.name);
  s.model = r.model;
  s.cluster = r.cluster;
  s.cluster.num_nodes = gpus / r.cluster.gpus_per_node;
  s.profile = r.profile;
  s.workload.seq_len = r.seq_len;
  s.workload.micro_batch_size = 1;
  s.workload.global_batch_size = r.global_batch;
  s.schedule.family = mapping_family().name();
  s.schedule.recompute = r.recompute;
  s.schedule.search = r.search;
  s.limits = r.limits;
  return s;
}

CapacityRow capacity_row(const CapacityRequest& r, std::int64_t gpus, ProbeCache* probes) {
  check_capacity_request(r);
  check_whole_nodes(r, gpus);
  const model::ScenarioSpec s = capacity_scenario(r, gpus);
  const cost::CostModel costs(*s.profile);
  JointOptions o;
  o.exact_top = 1;  // a row shows the best plan only
  o.threads = r.threads;
  o.progress = r.progress;
  o.require_fit = false;
  o.probes = probes;
  const JointSearch search = search_joint(s, costs, o);
  CapacityRow row;
  row.gpus = gpus;
  row.mappings = search.mappings;
  row.fitting = search.fitting;
  row.evaluated = search.evaluated;
  row.configurations = search.configurations;
  if (search.mappings == 0) {
    row.bound_by = "divisibility";
    row.bound_detail = fmt::format(
        "no mapping splits {} layers, {} experts, {} heads, sequence {} and {} sequences over {} GPUs", s.model.num_layers,
        s.model.moe.num_experts, s.model.num_heads, r.seq_len, r.global_batch, gpus);
    fill_budget(r, row);
    return row;
  }
  if (search.ranked.empty()) {
    row.bound_by = "memory";
    row.bound_detail = fmt::format("none of the {} valid mappings fits in the {:.1f} GiB usable per GPU; the "
                                   "leanest needs {:.1f} GiB",
                                   search.mappings, cost::usable_memory_bytes(r.cluster.gpu) / kGiB,
                                   search.least_memory_bytes / kGiB);
    fill_budget(r, row);
    return row;
  }
  const JointResult& best = search.best();
  row.plan = plan_of(best, r.cluster.gpu);
  const double tokens_per_iteration = static_cast<double>(r.global_batch) * static_cast<double>(r.seq_len);
  row.tokens_per_s = tokens_per_iteration / (best.priced.iteration_ms / 1000.0);
  fill_budget(r, row);
  bind(r, s, costs, search, row);
  return row;
}

void fill_budget(const CapacityRequest& r, CapacityRow& row) {
  if (!r.tokens || !row.tokens_per_s) {
    if (r.days) row.meets_deadline = false;  // no plan: no count of days to meet it with
    return;
  }
  const double seconds = *r.tokens / *row.tokens_per_s;
  row.days = seconds / kSecondsPerDay;
  row.gpu_hours = static_cast<double>(row.gpus) * seconds / kSecondsPerHour;
  if (r.cost_per_gpu_hour) row.cost = *row.gpu_hours * *r.cost_per_gpu_hour;
  if (r.days) row.meets_deadline = *row.days <= *r.days;
}

CapacityResult capacity_summary(const CapacityRequest& r, std::vector<CapacityRow> rows) {
  CapacityResult out;
  out.rows = std::move(rows);
  // GPU-hours per token are gpus / tokens_per_s whatever the budget or price:
  // the cost-optimal count is the one with the most tokens per GPU-second
  // (ties: the smaller count), among those that meet the deadline when one is set.
  const CapacityRow* cheapest = nullptr;
  for (const CapacityRow& row : out.rows) {
    if (!row.plan) continue;
    const bool in_time = !r.days || row.meets_deadline.value_or(false);
    if (!in_time) continue;
    if (r.days && (!out.smallest_gpus || row.gpus < *out.smallest_gpus)) out.smallest_gpus = row.gpus;
    const double per_gpu = *row.tokens_per_s / static_cast<double>(row.gpus);
    const double best = cheapest == nullptr ? 0.0 : *cheapest->tokens_per_s / static_cast<double>(cheapest->gpus);
    if (cheapest == nullptr || per_gpu > best || (per_gpu == best && row.gpus < cheapest->gpus)) cheapest = &row;
  }
  if (cheapest != nullptr) out.cost_optimal_gpus = cheapest->gpus;
  return out;
}

CapacityResult capacity(const CapacityRequest& r) {
  check_capacity_request(r);
  if (r.gpus.empty()) throw Error(ErrorKind::Input, "no GPU count to answer for", "request.gpus");
  std::vector<CapacityRow> rows;
  ProbeCache probes;  // the rows' layer shapes mostly recur from count to count
  for (std::int64_t gpus : r.gpus) rows.push_back(capacity_row(r, gpus, &probes));
  return capacity_summary(r, std::move(rows));
}

}  // namespace moeplan::plan
