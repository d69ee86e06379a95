#include <moeplan/family/fsmoe/rules.hpp>

#include <moeplan/family/layer_schedule_rules.hpp>

namespace moeplan::fsmoe {
namespace {

using S = const model::ScenarioSpec&;

class FsMoeRules final : public model::FamilyRules {
 public:
  FsMoeRules() {
    option_rules_ = family::layer_schedule_option_rules();
    option_rules_.push_back({"schedule.slicing", "", "FoldMoE's attention slices (token counts of each slice)",
                             [](S) { return true; }});
    option_rules_.push_back({"schedule.ar_chunk_bytes", "", "FlowMoE's all-reduce chunk size Sp", [](S) { return true; }});
    for (model::OptionRule& r : family::all_moe_block_option_rules()) option_rules_.push_back(std::move(r));
    read_fields_ = family::layer_schedule_read_fields();
    for (const char* f : {"schedule.degree_forward", "schedule.degree_backward", "schedule.fsmoe_released_solver_rules",
                          "parallelism.etp", "workload.global_batch_size"})
      read_fields_.push_back(f);
  }

  const std::string& name() const override { return name_; }
  const std::vector<std::string>& schedules() const override { return schedules_; }
  const std::vector<std::string>& read_fields() const override { return read_fields_; }
  const std::vector<model::OptionRule>& option_rules() const override { return option_rules_; }

  void validate(const model::ScenarioSpec& s) const override {
    family::validate_moe_model(s, name_);
    family::validate_all_moe_blocks(s, name_);
    family::validate_one_stage(s, name_);
  }

  std::vector<model::KnobSetting> plan_knob_settings(const model::PlanSpec& plan) const override {
    // The degrees and gradient partition are the closed forms' answer for the
    // scenario, which the builder derives again.
    return {{"schedule.name", plan.schedule, "schedule"}};
  }

 private:
  std::string name_ = "fsmoe";
  std::vector<std::string> schedules_{"none", "tutel", "tutel-improved", "pipemoe-lina", "fsmoe-no-iio", "fsmoe"};
  std::vector<std::string> read_fields_;
  std::vector<model::OptionRule> option_rules_;
};

}  // namespace

const model::FamilyRules& rules() {
  static const FsMoeRules r;
  return r;
}

}  // namespace moeplan::fsmoe
