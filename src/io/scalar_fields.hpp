#pragma once
// Setting one scalar field of a message by dotted path, from text: the
// mechanism behind --set and sweep axes.

#include <string>

#include <google/protobuf/message.h>

namespace moeplan::io {

/// Sets message.<path> = value, creating intermediate messages. A repeated
/// message is indexed, `costs[2].beta_ms` or every element `costs[*].beta_ms`;
/// a repeated scalar takes a comma-separated list that replaces it
/// (`schedule.slicing=4096,4096`). Unknown paths, message fields, bad indices
/// and unparsable values are input errors naming the path.
void set_scalar_field(google::protobuf::Message& message, const std::string& path, const std::string& value);

}  // namespace moeplan::io
