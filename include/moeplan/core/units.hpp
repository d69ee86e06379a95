#pragma once
// Conversions the cost formulas and reporters share: one definition each, so
// that no file keeps its own copy (and a unity build sees no two).
#include <cstdint>

namespace moeplan {

/// A count (tokens, bytes, parameters) as a double for the cost formulas:
/// exact up to 2^53, beyond any count a bounded input produces.
constexpr double as_double(std::int64_t v) { return static_cast<double>(v); }

/// Bytes per GiB (2^30), the unit memory is reported in.
inline constexpr double kGiB = 1024.0 * 1024 * 1024;

/// Milliseconds per second: costs are in ms, datasheet rates per second.
inline constexpr double kMsPerSecond = 1e3;

}  // namespace moeplan
