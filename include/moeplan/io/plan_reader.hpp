#pragma once
// Reading a plan back (issue 17 item 2): a plan written by `moeplan plan -o`
// names the scenario it was made for, the --set overrides it was made with and
// the knobs it chose. Set as scenario fields, they rebuild the planned run, so
// that `simulate PLAN` reproduces the plan's iteration time.

#include <string>
#include <vector>

#include <moeplan/io/loader.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::io {

/// A plan file (Protobuf text format, `# proto-message: Plan`). Input error,
/// located in the file, when it is malformed or lacks scenario_ref, family
/// or schedule (plans written before they carried them: plan again).
model::PlanSpec load_plan(const std::string& name_or_path);
/// The same on text already in memory, said to come from `path` (where errors
/// are located). For fuzzing and tests.
model::PlanSpec load_plan_text(const std::string& path, const std::string& text);

/// The overrides that make a scenario of the plan's family run the plan's
/// knobs (model::FamilyRules::plan_knob_settings of the plan's family), each
/// located at its knob in `plan_path`.
std::vector<Override> plan_knob_overrides(const model::PlanSpec& plan, const std::string& plan_path);

/// The planned run: the plan's scenario (resolved beside the plan file first,
/// as references are), its overrides, the knob overrides, then `overrides`
/// (the command line's, which may move the run away from the plan).
model::ScenarioSpec load_planned_scenario(const std::string& plan_path, const std::vector<Override>& overrides = {});
/// The planned run of a plan's text said to come from `path` (its scenario
/// resolved beside `path`, or bundled). For fuzzing and tests.
model::ScenarioSpec load_planned_scenario_text(const std::string& path, const std::string& text);

/// The scenario the plan was made for, with the plan's --set overrides but
/// not its knobs: what planning again searches (moeplan report PLAN).
model::ScenarioSpec load_plan_scenario(const std::string& plan_path);

/// load_planned_scenario for a plan file, load_scenario for anything else.
model::ScenarioSpec load_scenario_or_plan(const std::string& name_or_path, const std::vector<Override>& overrides = {});

}  // namespace moeplan::io
