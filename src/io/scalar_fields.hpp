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

/// Clears message.<path> (a field of non-repeated messages) when present; a
/// path through an unset message is already clear.
void clear_field(google::protobuf::Message& message, const std::string& path);

/// set_scalar_field, after clearing the fields a model states instead of this
/// one (docs/formats.md, "Overrides"): `moe.dropless=true` clears
/// moe.capacity_factor and `moe.capacity_factor` clears moe.dropless;
/// `moe.expert_ffn_hidden` and `moe.expert_ffn_hidden_scale` clear each
/// other; `moe.moe_layers` clears moe.moe_layer_interval and
/// moe.moe_layer_offset, and either of those clears moe.moe_layers. `path`
/// is relative to the Scenario (model.moe....).
void override_scalar_field(google::protobuf::Message& scenario, const std::string& path, const std::string& value);

}  // namespace moeplan::io
