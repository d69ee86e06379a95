#pragma once
// FlowMoE as a plug-in (plan/family.hpp): registered by family/builtin.hpp.

#include <moeplan/family/flowmoe/planner.hpp>
#include <moeplan/plan/family.hpp>
#include <moeplan/plan/search_record.hpp>

namespace moeplan::flowmoe {

/// The family (a static).
const plan::Family& family();

/// @brief FlowMoE's search record: R and Sp of every schedule, the BO trace.
class FlowMoeRecord final : public plan::SearchRecord {
 public:
  explicit FlowMoeRecord(FlowMoePlan plan) : plan_(std::move(plan)) {}
  const FlowMoePlan& plan() const { return plan_; }

  void write_json(io::Json& doc, const plan::PlanResult& result) const override;
  std::string text(const plan::PlanResult& result) const override;
  std::vector<const plan::Evaluation*> evaluations() const override;
  std::vector<plan::EdgeKnob> edge_knobs(const model::ScenarioSpec& scenario,
                                         const plan::PlanResult& result) const override;
  plan::SearchPicture picture(const model::ScenarioSpec& scenario, const plan::PlanResult& result,
                              const plan::Candidate& chosen) const override;
  std::string emit_format() const override { return "knobs"; }
  std::string emit(const plan::PlanResult& result, const model::ScenarioSpec& scenario) const override;

 private:
  FlowMoePlan plan_;
};

}  // namespace moeplan::flowmoe
