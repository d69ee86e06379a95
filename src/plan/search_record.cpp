#include <moeplan/plan/search_record.hpp>

#include <fmt/format.h>

#include <moeplan/model/recompute.hpp>
#include <moeplan/plan/family_registry.hpp>
#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::plan {
namespace {


}  // namespace

const Evaluation* SearchRecord::evaluation(const std::string& schedule) const {
  for (const Evaluation* e : evaluations())
    if (e->schedule == schedule) return e;
  return nullptr;
}

std::vector<EdgeKnob> SearchRecord::edge_knobs(const model::ScenarioSpec& scenario, const PlanResult& result) const {
  (void)scenario;
  (void)result;
  return {};
}

BindingConstraint SearchRecord::binding_constraint(const model::ScenarioSpec& scenario,
                                                   const PlanResult& result) const {
  (void)scenario;
  if (!result.chosen.fits)
    return {"memory", fmt::format("the scenario's mapping needs {:.1f} GiB per GPU and does not fit; the schedules "
                                  "share it, so the plan is for a run that would not fit",
                                  result.chosen.memory_bytes_per_gpu / kGiB)};
  return {"none", "the schedules share the scenario's mapping, which fits in memory"};
}

Savings SearchRecord::savings(const PlanResult& result) const {
  const Evaluation* base = evaluation("none");
  const Evaluation* chosen = evaluation(result.chosen.schedule);
  if (base == nullptr || chosen == nullptr) return {};
  return {"none",
          {{"compute_ms", base->compute_ms, chosen->compute_ms},
           {"exposed_comm_ms", base->exposed_comm_ms, chosen->exposed_comm_ms},
           {"a2a_critical_ms", base->a2a_critical_ms, chosen->a2a_critical_ms},
           {"bubble_ms", base->bubble_ms, chosen->bubble_ms}}};
}

double SearchRecord::evaluate_candidate(const ScenarioRun& run, const PlanResult& result,
                                        const Candidate& candidate) const {
  return family_named(result.family).run_candidate(run, result, candidate).timeline.makespan_ms;
}

std::string SearchRecord::knobs_words(const model::PlanKnobs& knobs) const { return knobs_text(knobs); }

std::string knobs_text(const model::PlanKnobs& k) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : " ") + part; };
  if (k.degree) add(fmt::format("d {}", *k.degree));
  if (k.ar_chunk_bytes) add(fmt::format("Sp {}", *k.ar_chunk_bytes));
  if (k.parallelism)
    add(fmt::format("tp {} cp {} pp {} vpp {} ep {} etp {}", k.parallelism->tp, k.parallelism->cp, k.parallelism->pp,
                    k.parallelism->vpp, k.parallelism->ep, k.parallelism->etp));
  if (k.micro_batch_size) add(fmt::format("mb {}", *k.micro_batch_size));
  if (k.precision) add(model::to_string(*k.precision));
  if (k.recompute) add("recompute " + model::recompute_text(*k.recompute));
  return out;
}

std::vector<SearchBar> evaluation_bars(const SearchRecord& record, const std::string& chosen_schedule) {
  std::vector<SearchBar> out;
  for (const Evaluation* e : record.evaluations())
    out.push_back({fmt::format("{} (d {})", e->schedule, e->degree), e->iteration_ms, e->compute_ms,
                   e->exposed_comm_ms,
                   e->schedule == chosen_schedule ? "chosen" : e->schedule == "none" ? "baseline" : ""});
  return out;
}

}  // namespace moeplan::plan
