#pragma once
// MoE Parallel Folding as a plug-in (plan/family.hpp): the family that
// searches mappings (folded and coupled) instead of overlapping a fixed one.
// Registered by family/builtin.hpp.

#include <vector>

#include <moeplan/plan/family.hpp>
#include <moeplan/plan/mapping_run.hpp>
#include <moeplan/plan/search_record.hpp>

namespace moeplan::folding {

/// The family (a static).
const plan::Family& family();

/// @brief The folding search: every mapping of each mode, those that fit first.
class FoldingRecord final : public plan::SearchRecord {
 public:
  FoldingRecord(std::vector<plan::MappingResult> folded, std::vector<plan::MappingResult> coupled)
      : folded_(std::move(folded)), coupled_(std::move(coupled)) {}
  const std::vector<plan::MappingResult>& folded() const { return folded_; }
  const std::vector<plan::MappingResult>& coupled() const { return coupled_; }

  void write_json(io::Json& doc, const plan::PlanResult& result) const override;
  std::string text(const plan::PlanResult& result) const override;
  plan::BindingConstraint binding_constraint(const model::ScenarioSpec& scenario,
                                             const plan::PlanResult& result) const override;
  plan::Savings savings(const plan::PlanResult& result) const override;
  plan::SearchPicture picture(const model::ScenarioSpec& scenario, const plan::PlanResult& result,
                              const plan::Candidate& chosen) const override;
  std::string emit_format() const override { return "megatron"; }
  std::string emit(const plan::PlanResult& result, const model::ScenarioSpec& scenario) const override;

 private:
  std::vector<plan::MappingResult> folded_;
  std::vector<plan::MappingResult> coupled_;
};

}  // namespace moeplan::folding
