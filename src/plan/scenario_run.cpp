#include <moeplan/plan/scenario_run.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/families.hpp>
#include <moeplan/plan/flowmoe_planner.hpp>
#include <moeplan/sched/flowmoe.hpp>
#include <moeplan/sched/foldmoe.hpp>
#include <moeplan/sched/fsmoe.hpp>

namespace moeplan::plan {
std::optional<std::string> ruled_out_schedule(const model::ScenarioSpec& s, const std::string& schedule) {
  if (s.schedule.family == "foldmoe" && !s.schedule.slicing_tokens.empty() && schedule == "1a1m-uniform")
    return std::string("schedule.slicing fixes the attention slices; 1a1m-uniform chooses its own (Algorithm 1)");
  return std::nullopt;
}

ScenarioRun::ScenarioRun(model::ScenarioSpec spec) : spec_(std::move(spec)) {
  if (!spec_.profile)
    throw Error(ErrorKind::Input,
                fmt::format("scenario {} names no cost profile; add profile_ref", quoted_for_error(spec_.name)),
                "profile_ref");
  costs_ = std::make_unique<cost::CostModel>(*spec_.profile);
}

ScenarioRun::ScenarioRun(ScenarioRun&&) noexcept = default;
ScenarioRun::~ScenarioRun() = default;

std::vector<RequestedSchedule> ScenarioRun::schedules(const std::string& requested) const {
  const std::vector<std::string>& all = model::family_schedules(spec_.schedule.family);
  if (requested == "all") {
    std::vector<RequestedSchedule> out;
    for (const std::string& name : all) out.push_back({name, ruled_out_schedule(spec_, name)});
    return out;
  }
  if (std::find(all.begin(), all.end(), requested) == all.end()) {
    const std::vector<std::string> owners = model::families_with_schedule(requested);
    throw Error(ErrorKind::Input,
                owners.empty() ? fmt::format("--schedule: unknown schedule {} ({} schedules: {}, or all)",
                                             quoted_for_error(requested), spec_.schedule.family, model::join_names(all))
                               : fmt::format("--schedule: {} is a {} schedule; this scenario is {} ({}, or all)",
                                             quoted_for_error(requested), model::join_names(owners),
                                             spec_.schedule.family, model::join_names(all)));
  }
  if (auto why = ruled_out_schedule(spec_, requested)) throw Error(ErrorKind::Input, fmt::format("--schedule: {}", *why));
  return {{requested, std::nullopt}};
}

const FsMoePlan& ScenarioRun::fsmoe_plan() const {
  if (!fsmoe_) fsmoe_ = std::make_unique<FsMoePlan>(plan_fsmoe(spec_, *costs_, {}));
  return *fsmoe_;
}

sched::BuiltSchedule ScenarioRun::build(const std::string& schedule, std::optional<std::int64_t> degree) const {
  const model::ScenarioSpec& s = spec_;
  if (s.schedule.family == "folding")
    throw Error(ErrorKind::Input, "folding scenarios have no overlap schedule to build", "schedule.family");
  if (degree && *degree < 1)
    throw Error(ErrorKind::Input, fmt::format("--degree: must be at least 1, got {}", *degree));
  if (s.schedule.family == "fsmoe") {
    sched::FsMoeKnobs knobs = fsmoe_knobs(fsmoe_plan(), schedule);
    if (degree) {
      knobs.degree_forward = knobs.degree_backward = *degree;
      knobs.degree_backward_per_layer.clear();
    }
    return sched::build_fsmoe(s, *costs_, knobs);
  }
  if (s.schedule.family == "flowmoe") {
    // R: --degree, else the scenario's, else FlowMoE's default 2 (its code fixes
    // R = 2); Sp: the scenario's, else the largest per-block tensor's 1/4 (the
    // code starts BO at 4 MiB).
    const auto [lo, hi] = chunk_search_space(s);
    const std::int64_t chunk = s.schedule.ar_chunk_bytes.value_or(std::max(lo, hi / 4));
    return sched::build_flowmoe(s, *costs_, flowmoe_knobs(s, schedule, degree.value_or(s.schedule.degree.value_or(2)), chunk));
  }
  // FoldMoE: d from --degree, else the scenario's, else 4 (the middle of the
  // paper's 2..16); the scenario's slicing for the schedules it applies to.
  sched::ScheduleKnobs knobs{schedule, degree.value_or(s.schedule.degree.value_or(4)), {}};
  knobs.multi_rank = s.schedule.multi_rank;
  if (schedule == "aaam" || schedule == "1a1m") {
    knobs.slicing_tokens = s.schedule.slicing_tokens;
    if (!knobs.slicing_tokens.empty() && degree && *degree != static_cast<std::int64_t>(knobs.slicing_tokens.size()))
      throw Error(ErrorKind::Input,
                  fmt::format("--degree: {} disagrees with schedule.slicing's {} slices", *degree,
                              knobs.slicing_tokens.size()));
  }
  return sched::build_foldmoe(s, *costs_, knobs);
}

double ScenarioRun::memory_bytes_per_gpu() const {
  return memory_per_gpu(spec_, FoldingConfig::from(spec_.parallel, spec_.workload.micro_batch_size));
}

bool ScenarioRun::fits_in_memory() const { return plan::fits_in_memory(spec_, memory_bytes_per_gpu()); }

FoldingResult ScenarioRun::price_own_mapping(FoldingTrace* trace) const {
  if (spec_.schedule.family != "folding")
    throw Error(ErrorKind::Input, "only folding scenarios price a mapping", "schedule.family");
  return price_mapping(spec_, *costs_, FoldingConfig::from(spec_.parallel, spec_.workload.micro_batch_size), {},
                       trace);
}

}  // namespace moeplan::plan
