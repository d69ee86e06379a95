#pragma once
// Writing a cost profile as Protobuf text format, the form `moeplan fit` and
// `moeplan datasheet-profile` produce and the loader reads back.

#include <string>

#include <moeplan/model/specs.hpp>

namespace moeplan::io {

/// The profile as text format, with a "# proto-message: CostProfile" header and
/// each line of comment (may be empty) as a "# " line after it.
std::string profile_to_textproto(const model::CostProfileSpec& profile, const std::string& comment);

}  // namespace moeplan::io
