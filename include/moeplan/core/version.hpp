#pragma once

namespace moeplan {
/// Release of moeplan; plans record it.
inline constexpr const char* kVersion = "0.1.0";
}  // namespace moeplan
