#include <moeplan/family/flowmoe/rules.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/family/layer_schedule_rules.hpp>

namespace moeplan::flowmoe {
namespace {

using S = const model::ScenarioSpec&;

// The least all-reduce chunk (Sp) a scenario may set. FlowMoE's own search of
// Sp starts at 128 KiB (its code; sp_tuner.hpp); 1 KiB is 128x below any
// chunk it would try. 1-byte chunks made 12.8 million all-reduce tasks of one
// block's gradients, which `execute` then ran for minutes (issue 28).
constexpr std::int64_t kMinArChunkBytes = 1024;

class FlowMoeRules final : public model::FamilyRules {
 public:
  FlowMoeRules() {
    option_rules_ = family::layer_schedule_option_rules();
    for (const char* f : {"schedule.degree_forward", "schedule.degree_backward"})
      option_rules_.push_back({f, "", "FSMoE's per-phase pipeline degrees r_f and r_b; other families take one degree",
                               [](S) { return true; }});
    option_rules_.push_back({"schedule.slicing", "", "FoldMoE's attention slices (token counts of each slice)",
                             [](S) { return true; }});
    option_rules_.push_back(
        {"schedule.fsmoe_released_solver_rules", "", "a rule set of FSMoE's degree solver", [](S) { return true; }});
    for (model::OptionRule& r : family::all_moe_block_option_rules()) option_rules_.push_back(std::move(r));
    option_rules_.push_back({"parallelism.etp", "when etp is not 1",
                             "FlowMoE's schedule splits experts over ep only (its paper runs expert and data parallelism)",
                             [](S s) { return s.parallel.etp != 1; }});
    option_rules_.push_back({"workload.global_batch_size", "when it is not micro_batch_size x dp",
                             "FlowMoE's schedule runs one micro-batch per rank per iteration",
                             [](S s) { return s.workload.micro_batches_per_rank(s.parallel.dp) != 1; }});
    read_fields_ = family::layer_schedule_read_fields();
    read_fields_.push_back("schedule.ar_chunk_bytes");
  }

  const std::string& name() const override { return name_; }
  const std::vector<std::string>& schedules() const override { return schedules_; }
  const std::vector<std::string>& read_fields() const override { return read_fields_; }
  const std::vector<model::OptionRule>& option_rules() const override { return option_rules_; }

  void validate(const model::ScenarioSpec& s) const override {
    family::validate_moe_model(s, name_);
    family::validate_all_moe_blocks(s, name_);
    const model::ParallelSpec& p = s.parallel;
    const model::WorkloadSpec& w = s.workload;
    if (p.etp != 1)
      throw_input_error("parallelism.etp", fmt::format("etp = {}; FlowMoE's schedule splits experts over ep only", p.etp));
    if (w.micro_batches_per_rank(p.dp) != 1)
      throw_input_error("workload.global_batch_size",
                        fmt::format("{} micro-batches per rank; FlowMoE's schedule runs one per iteration (set "
                                    "global_batch_size = micro_batch_size x dp = {})",
                                    w.micro_batches_per_rank(p.dp), w.micro_batch_size * p.dp));
    family::validate_one_stage(s, name_);
    if (s.schedule.ar_chunk_bytes && *s.schedule.ar_chunk_bytes < kMinArChunkBytes)
      throw_input_error("schedule.ar_chunk_bytes",
                        fmt::format("{} bytes; an all-reduce chunk is at least {} bytes", *s.schedule.ar_chunk_bytes,
                                    kMinArChunkBytes));
  }

  std::vector<model::KnobSetting> plan_knob_settings(const model::PlanSpec& plan) const override {
    const model::PlanKnobs& k = plan.knobs;
    std::vector<model::KnobSetting> out{{"schedule.name", plan.schedule, "schedule"}};
    if (k.degree) out.push_back({"schedule.degree", std::to_string(*k.degree), "knobs.degree"});
    if (k.ar_chunk_bytes)
      out.push_back({"schedule.ar_chunk_bytes", std::to_string(*k.ar_chunk_bytes), "knobs.ar_chunk_bytes"});
    return out;
  }

 private:
  std::string name_ = "flowmoe";
  std::vector<std::string> schedules_{"none", "tutel", "flowmoe-at", "flowmoe-ar", "flowmoe"};
  std::vector<std::string> read_fields_;
  std::vector<model::OptionRule> option_rules_;
};

}  // namespace

const model::FamilyRules& rules() {
  static const FlowMoeRules r;
  return r;
}

}  // namespace moeplan::flowmoe
