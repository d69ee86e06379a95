#pragma once
// Private to src/io: the model format's upper bounds on sizes, shared by the
// reader (proto_convert.cpp) and import-hf (hf_config.cpp), which must check
// a config's values against them before it multiplies two of them.

#include <cstdint>

namespace moeplan::io {

// Far above any real model, so that every count and product later stays
// inside 64-bit integers and every graph stays buildable:
// layers x experts x 3 x d_model x hidden < 2^63.
inline constexpr std::int64_t kMaxLayers = 1024;
inline constexpr std::int64_t kMaxWidth = 65536;     // d_model, heads, head_dim
inline constexpr std::int64_t kMaxHidden = 1 << 20;  // FFN and expert hidden sizes
inline constexpr std::int64_t kMaxVocab = 1 << 24;
inline constexpr std::int64_t kMaxExperts = 4096;

}  // namespace moeplan::io
