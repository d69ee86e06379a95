#pragma once
// The resolved Scenario message (references in place, `set:` lines and
// overrides applied), for the io functions that read fields by reflection.

#include <string>
#include <vector>

#include <moeplan/io/loader.hpp>

#include "io/proto/moeplan.pb.h"

namespace moeplan::io {

/// The scenario as load_scenario converts it; input errors as load_scenario's.
pb::Scenario resolved_scenario_message(const std::string& name_or_path, const std::vector<Override>& overrides);

}  // namespace moeplan::io
