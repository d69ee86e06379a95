#pragma once
// The schedule families a scenario can belong to and the schedules of each:
// one table, read by validation, the builders, the planners and the CLI.

#include <string>
#include <vector>

namespace moeplan::model {

/// foldmoe, fsmoe, flowmoe, folding.
const std::vector<std::string>& families();
bool is_family(const std::string& name);

/// The schedules of a family in CLI order; MoE Parallel Folding has no overlap
/// schedule, its "schedules" are the two mapping searches, folded and coupled.
/// Input error (field schedule.family) for an unknown family.
const std::vector<std::string>& family_schedules(const std::string& family);

/// The families that have a schedule of this name (empty: no such schedule).
std::vector<std::string> families_with_schedule(const std::string& schedule);

/// "a, b, c", for messages.
std::string join_names(const std::vector<std::string>& names);

}  // namespace moeplan::model
