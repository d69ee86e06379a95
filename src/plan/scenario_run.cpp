#include <moeplan/plan/scenario_run.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/units.hpp>
#include <moeplan/cost/routing.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/cost/memory.hpp>
#include <moeplan/model/family_rules.hpp>
#include <moeplan/plan/family_registry.hpp>

namespace moeplan::plan {

ScenarioRun::ScenarioRun(model::ScenarioSpec spec) : spec_(std::move(spec)) {
  if (!spec_.profile)
    throw Error(ErrorKind::Input,
                fmt::format("scenario {} names no cost profile; add profile_ref", quoted_for_error(spec_.name)),
                "profile_ref");
  costs_ = std::make_unique<cost::CostModel>(*spec_.profile);
  family_ = &family_of(spec_);
  maker_ = family_->schedule_maker(spec_, *costs_);
}

ScenarioRun::ScenarioRun(ScenarioRun&&) noexcept = default;
ScenarioRun::~ScenarioRun() = default;

std::vector<RequestedSchedule> ScenarioRun::schedules(const std::string& requested) const {
  const model::FamilyRules& rules = family_->rules();
  const std::vector<std::string>& all = rules.schedules();
  if (requested == "all") {
    std::vector<RequestedSchedule> out;
    for (const std::string& name : all) out.push_back({name, rules.ruled_out(spec_, name)});
    return out;
  }
  if (std::find(all.begin(), all.end(), requested) == all.end()) {
    const std::vector<std::string> owners = model::families_with_schedule(requested);
    throw Error(ErrorKind::Input,
                owners.empty() ? fmt::format("unknown schedule {} ({} schedules: {}, or all)",
                                             quoted_for_error(requested), spec_.schedule.family, model::join_names(all))
                               : fmt::format("{} is a {} schedule; this scenario is {} ({}, or all)",
                                             quoted_for_error(requested), model::join_names(owners),
                                             spec_.schedule.family, model::join_names(all)),
                "request.schedule");
  }
  if (auto why = rules.ruled_out(spec_, requested)) throw Error(ErrorKind::Input, *why, "request.schedule");
  return {{requested, std::nullopt}};
}

std::vector<std::string> ScenarioRun::runnable_schedules(const std::string& requested,
                                                        std::vector<std::string>* notes) const {
  std::vector<std::string> names;
  for (const RequestedSchedule& r : schedules(requested)) {
    if (!r.skipped_because) {
      names.push_back(r.name);
      continue;
    }
    if (notes != nullptr) notes->push_back(fmt::format("{} skipped: {}", r.name, *r.skipped_because));
  }
  return names;
}

sched::BuiltSchedule ScenarioRun::build(const std::string& schedule, std::optional<std::int64_t> degree) const {
  return checked_maker(degree).build(schedule, degree);
}

sched::BuiltSchedule ScenarioRun::build_for_replay(const std::string& schedule,
                                                   std::optional<std::int64_t> degree) const {
  return checked_maker(degree).build_for_replay(schedule, degree);
}

const ScheduleMaker& ScenarioRun::checked_maker(std::optional<std::int64_t> degree) const {
  if (maker_ == nullptr)
    throw Error(ErrorKind::Input,
                fmt::format("{} scenarios have no named schedule to build", spec_.schedule.family), "schedule.family");
  if (degree && *degree < 1) throw Error(ErrorKind::Input, fmt::format("must be at least 1, got {}", *degree), "request.degree");
  return *maker_;
}

std::optional<RoutingReport> ScenarioRun::routing_report(const sched::BuiltSchedule& built) const {
  const model::ScenarioSpec& s = spec_;
  if (s.workload.routing == model::Routing::Balanced || maker_ == nullptr) return std::nullopt;
  const dag::TaskGraph& g = built.graph;
  std::int32_t graph_ranks = 1;
  for (const dag::Resource& r : g.resources()) graph_ranks = std::max(graph_ranks, r.rank + 1);
  const bool multi = graph_ranks > 1;
  const std::int64_t ep = s.parallel.ep;
  const std::int64_t drawn = multi ? graph_ranks : ep;
  // Multi-rank graphs draw over their own EP groups (Megatron's, strided when
  // etp > 1), as the builders do; symmetric mode draws one group standing for all.
  const cost::RoutedLoads loads =
      multi ? cost::route(s, sched::rank_layout(s, true, s.schedule.family.c_str()).ep) : cost::route(s, drawn);
  const bool padded = loads.padded;
  // Each drawn rank's AlltoAll bytes of one whole micro-batch, per MoE layer.
  const double balanced = cost::moe_layer_sizes(s.model, s.parallel, s.workload).dispatch_bytes;
  std::vector<std::vector<double>> bytes(loads.layers.size());
  for (std::size_t l = 0; l < loads.layers.size(); ++l)
    for (const cost::RankLoad& load : loads.layers[l])
      bytes[l].push_back(padded ? balanced
                                : cost::moe_layer_sizes_for(s.model, s.parallel, s.workload, load).dispatch_bytes);
  // What the builder priced a whole micro-batch's AlltoAll of each layer at
  // (symmetric mode): FlowMoE each layer's most loaded rank, FoldMoE and FSMoE
  // the most loaded rank of the most loaded layer (cost::routed_moe_layer_sizes).
  const bool per_layer = maker_->routing_priced_per_layer();
  std::vector<double> priced(bytes.size(), 0.0);
  double worst = 0;
  for (std::size_t l = 0; l < bytes.size(); ++l) {
    for (double b : bytes[l]) priced[l] = std::max(priced[l], b);
    worst = std::max(worst, priced[l]);
  }
  if (!per_layer) std::fill(priced.begin(), priced.end(), worst);
  // Block index -> MoE layer index.
  std::vector<std::int64_t> moe_index(s.model.moe_layer.size(), -1);
  std::int64_t next = 0;
  for (std::size_t b = 0; b < s.model.moe_layer.size(); ++b)
    if (s.model.moe_layer[b]) moe_index[b] = next++;
  const cost::GroupShape ep_group = cost::strided_group_shape(ep, s.parallel.etp, s.cluster);
  RoutingReport out;
  out.routing = model::to_string(s.workload.routing);
  out.dropped_token_fraction = loads.dropped_fraction;
  out.per_rank_a2a_ms.assign(static_cast<std::size_t>(drawn), 0.0);
  std::vector<std::size_t> members;
  for (dag::TaskId t = 0; t < g.size(); ++t) {
    if (g.op(t) != model::OpClass::A2A || g.layer(t) < 0) continue;
    const std::int64_t m = moe_index.at(static_cast<std::size_t>(g.layer(t)));
    MOEPLAN_CHECK(m >= 0, "an AlltoAll belongs to an MoE layer");
    const std::vector<double>& layer = bytes[static_cast<std::size_t>(m)];
    members.clear();
    if (multi) {
      for (dag::ResourceId r : g.resources(t)) members.push_back(static_cast<std::size_t>(g.resources()[r].rank));
    } else {
      for (std::size_t r = 0; r < layer.size(); ++r) members.push_back(r);
    }
    double reference = 0;
    if (multi) {
      for (std::size_t r : members) reference = std::max(reference, layer[r]);
    } else {
      reference = priced[static_cast<std::size_t>(m)];
    }
    if (reference <= 0) continue;
    // The task carries `share` of a whole micro-batch (a chunk, a slice); each member its own bytes of that share.
    const double share = g.size(t) / reference;
    for (std::size_t r : members)
      out.per_rank_a2a_ms[r] += costs_->communication(model::OpClass::A2A, ep_group, share * layer[r]).value;
  }
  for (std::size_t r = 1; r < out.per_rank_a2a_ms.size(); ++r)
    if (out.per_rank_a2a_ms[r] > out.per_rank_a2a_ms[static_cast<std::size_t>(out.slowest_rank)])
      out.slowest_rank = static_cast<std::int64_t>(r);
  if (padded)
    out.priced = "capacity buffers padded to capacity_factor: every rank's sizes are balanced routing's; the "
                 "imbalance drops tokens";
  else if (multi)
    out.priced = "each rank's own all-to-all-v and experts; each AlltoAll ends with its slowest member";
  else if (per_layer)
    out.priced = fmt::format("symmetric mode: each MoE layer at its most loaded rank of one EP group (ranks 0-{})",
                             ep - 1);
  else
    out.priced = fmt::format("symmetric mode: every MoE layer at the most loaded rank of the most loaded layer of one "
                             "EP group (ranks 0-{})",
                             ep - 1);
  return out;
}

double ScenarioRun::memory_bytes_per_gpu() const {
  return cost::memory_per_gpu(spec_.model, spec_.workload, cost::MemorySettings::of(spec_),
                              cost::MappingConfig::from(spec_.parallel, spec_.workload.micro_batch_size));
}

bool ScenarioRun::fits_in_memory() const { return cost::fits_in_memory(spec_.cluster.gpu, memory_bytes_per_gpu()); }

std::string ScenarioRun::memory_note() const {
  const double bytes = memory_bytes_per_gpu();
  const double usable = cost::usable_memory_bytes(spec_.cluster.gpu);
  if (!cost::fits_in_memory(spec_.cluster.gpu, bytes))
    return fmt::format("{} needs {:.1f} GiB per GPU, more than the {:.1f} GiB usable: these times are for a run that "
                       "would not fit",
                       spec_.name, bytes / kGiB, usable / kGiB);
  if (cost::tight_in_memory(spec_.cluster.gpu, bytes))
    return fmt::format("{} needs {:.1f} GiB per GPU of the {:.1f} GiB usable, within the memory model's largest "
                       "under-prediction of a measured peak ({:.1f}%): the run may not fit",
                       spec_.name, bytes / kGiB, usable / kGiB,
                       100 * cost::MemoryModel{}.largest_underprediction);
  return "";
}

}  // namespace moeplan::plan
