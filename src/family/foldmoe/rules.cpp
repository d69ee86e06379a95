#include <moeplan/family/foldmoe/rules.hpp>

#include <fmt/format.h>

#include <moeplan/family/layer_schedule_rules.hpp>

namespace moeplan::foldmoe {
namespace {

using S = const model::ScenarioSpec&;

class FoldMoeRules final : public model::FamilyRules {
 public:
  FoldMoeRules() {
    option_rules_ = family::layer_schedule_option_rules();
    // Knobs of other families' schedules.
    for (const char* f : {"schedule.degree_forward", "schedule.degree_backward"})
      option_rules_.push_back({f, "", "FSMoE's per-phase pipeline degrees r_f and r_b; other families take one degree",
                               [](S) { return true; }});
    option_rules_.push_back({"schedule.ar_chunk_bytes", "", "FlowMoE's all-reduce chunk size Sp", [](S) { return true; }});
    option_rules_.push_back(
        {"schedule.fsmoe_released_solver_rules", "", "a rule set of FSMoE's degree solver", [](S) { return true; }});
    read_fields_ = family::layer_schedule_read_fields();
    for (const char* f : {"schedule.slicing", "parallelism.etp", "workload.global_batch_size", "model.moe.moe_layer_interval",
                          "model.moe.moe_layer_offset", "model.moe.moe_layers", "model.moe.first_k_dense"})
      read_fields_.push_back(f);
  }

  const std::string& name() const override { return name_; }
  const std::vector<std::string>& schedules() const override { return schedules_; }
  const std::vector<std::string>& read_fields() const override { return read_fields_; }
  const std::vector<model::OptionRule>& option_rules() const override { return option_rules_; }

  void validate(const model::ScenarioSpec& s) const override {
    family::validate_moe_model(s, name_);
    family::validate_one_stage(s, name_);
  }

  std::optional<std::string> ruled_out(const model::ScenarioSpec& s, const std::string& schedule) const override {
    if (!s.schedule.slicing_tokens.empty() && schedule == "1a1m-uniform")
      return std::string("schedule.slicing fixes the attention slices; 1a1m-uniform chooses its own (Algorithm 1)");
    return std::nullopt;
  }

  std::vector<model::KnobSetting> plan_knob_settings(const model::PlanSpec& plan) const override {
    const model::PlanKnobs& k = plan.knobs;
    std::vector<model::KnobSetting> out{{"schedule.name", plan.schedule, "schedule"}};
    if (k.degree) out.push_back({"schedule.degree", std::to_string(*k.degree), "knobs.degree"});
    if ((plan.schedule == "aaam" || plan.schedule == "1a1m") && !k.slicing_tokens.empty()) {
      std::string list;
      for (std::int64_t t : k.slicing_tokens) list += fmt::format("{}{}", list.empty() ? "" : ",", t);
      out.push_back({"schedule.slicing", list, "knobs.slicing"});
    }
    return out;
  }

 private:
  std::string name_ = "foldmoe";
  std::vector<std::string> schedules_{"none", "tutel", "aaam", "1a1m", "1a1m-uniform"};
  std::vector<std::string> read_fields_;
  std::vector<model::OptionRule> option_rules_;
};

}  // namespace

const model::FamilyRules& rules() {
  static const FoldMoeRules r;
  return r;
}

}  // namespace moeplan::foldmoe
