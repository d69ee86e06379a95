#pragma once
// Upper bounds on sizes, far above any real model or cluster, so that every
// count and product later stays inside 64-bit integers and every graph stays
// buildable: layers x experts x 3 x d_model x hidden < 2^63. The scenario
// format checks its fields against them (io/proto_convert.cpp), and the
// options that give the same quantities on a command line or in a Python call
// take the same bounds (io/number_options.hpp).

#include <cstdint>

namespace moeplan::model {

inline constexpr std::int64_t kMaxLayers = 1024;
inline constexpr std::int64_t kMaxWidth = 65536;     // d_model, heads, head_dim
inline constexpr std::int64_t kMaxHidden = 1 << 20;  // FFN and expert hidden sizes
inline constexpr std::int64_t kMaxVocab = 1 << 24;
inline constexpr std::int64_t kMaxExperts = 4096;
inline constexpr std::int64_t kMaxNodes = 1 << 17;
inline constexpr std::int64_t kMaxGpusPerNode = 1024;
// NVLink Switch systems join at most 576 GPUs in one domain (NVIDIA's NVLink
// Switch, 5th generation); 1 << 14 is 28x that and keeps domain x ports small.
inline constexpr std::int64_t kMaxNvlinkDomainGpus = 1 << 14;
inline constexpr std::int64_t kMaxParallel = 1 << 20;  // any one parallel size, and a world of GPUs
inline constexpr std::int64_t kMaxSeq = 1 << 27;       // 134M tokens
inline constexpr std::int64_t kMaxBatch = 1 << 24;
inline constexpr std::int64_t kMaxDegree = 4096;
// A GLU clamp bounds bf16 activations (model::MoeSpec::glu_clamp): GPT-OSS's is
// 7; 65,504 is fp16's largest finite value.
inline constexpr double kMaxGluClamp = 65504.0;

}  // namespace moeplan::model
