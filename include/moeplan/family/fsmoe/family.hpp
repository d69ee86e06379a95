#pragma once
// FSMoE as a plug-in (plan/family.hpp): registered by family/builtin.hpp.

#include <moeplan/family/fsmoe/planner.hpp>
#include <moeplan/plan/family.hpp>
#include <moeplan/plan/search_record.hpp>

namespace moeplan::fsmoe {

/// The family (a static).
const plan::Family& family();

/// The plan knobs of a schedule as FSMoE runs it: its degrees per phase, and
/// section 5's gradient partition (whole bytes per generalized layer) for the
/// schedules that take it.
model::PlanKnobs plan_knobs(const FsMoeKnobs& knobs);

/// @brief FSMoE's search record: the closed forms' degrees, the gradient
/// partition and every schedule's evaluation.
class FsMoeRecord final : public plan::SearchRecord {
 public:
  explicit FsMoeRecord(FsMoePlan plan) : plan_(std::move(plan)) {}
  const FsMoePlan& plan() const { return plan_; }

  void write_json(io::Json& doc, const plan::PlanResult& result) const override;
  std::string text(const plan::PlanResult& result) const override;
  std::vector<const plan::Evaluation*> evaluations() const override;
  std::string knobs_words(const model::PlanKnobs& knobs) const override;
  plan::SearchPicture picture(const model::ScenarioSpec& scenario, const plan::PlanResult& result,
                              const plan::Candidate& chosen) const override;
  std::string emit_format() const override { return "knobs"; }
  std::string emit(const plan::PlanResult& result, const model::ScenarioSpec& scenario) const override;

 private:
  FsMoePlan plan_;
};

}  // namespace moeplan::fsmoe
