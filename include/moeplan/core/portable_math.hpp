#pragma once
// Arithmetic whose results are the same bytes on every machine: a 64-bit mix
// for seeded streams, and exp and log built from IEEE additions,
// multiplications, divisions and exact frexp/ldexp only (libm's results may
// differ between implementations in the last bits). The routing sampler and
// the engine's compute noise draw from these, so a seed gives one answer
// everywhere. The file is compiled without fused multiply-add contraction.

#include <cstdint>

namespace moeplan {

/// splitmix64's step (Steele, Lea and Flood 2014): advances `state` and
/// returns the next 64-bit output.
std::uint64_t splitmix64(std::uint64_t& state);

/// A uniform double in [0, 1) from the top 53 bits of `bits`.
inline double unit_uniform(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

/// log(x) for finite x > 0 and exp(x) for finite x (0 below -745; an internal
/// error from 709 on, where a double overflows). Relative error under 1e-15.
double portable_log(double x);
double portable_exp(double x);

}  // namespace moeplan
