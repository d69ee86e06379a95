#pragma once
// FoldMoE as a plug-in (plan/family.hpp): registered by family/builtin.hpp.

#include <moeplan/family/foldmoe/planner.hpp>
#include <moeplan/plan/family.hpp>
#include <moeplan/plan/search_record.hpp>

namespace moeplan::foldmoe {

/// The family (a static).
const plan::Family& family();

/// @brief FoldMoE's search record: the best degree of every schedule.
class FoldMoeRecord final : public plan::SearchRecord {
 public:
  explicit FoldMoeRecord(FoldMoePlan plan) : plan_(std::move(plan)) {}
  const FoldMoePlan& plan() const { return plan_; }

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
  FoldMoePlan plan_;
};

}  // namespace moeplan::foldmoe
