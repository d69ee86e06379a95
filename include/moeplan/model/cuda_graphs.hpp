#pragma once
// The text of schedule.cuda_graphs (docs/formats.md): "none", "full_iteration"
// or Megatron-Core's per-layer modules joined by '+' ("attn+moe_router").

#include <string>

#include <moeplan/model/specs.hpp>

namespace moeplan::model {

/// The option's text: "none", "full_iteration" or the modules joined by '+'
/// in Megatron-Core's order (attn, moe_router, moe_preprocess).
std::string cuda_graphs_text(const CudaGraphs& graphs);

/// Parses that text; an input error naming schedule.cuda_graphs when it is not
/// one, lists a module twice, mixes full_iteration with modules, or names
/// moe_preprocess without moe_router (Megatron-Core captures the
/// preprocessing with the router, transformer_config.py), or moe_router
/// without moe_preprocess (one part of the host-issue model: not priceable).
CudaGraphs parse_cuda_graphs(const std::string& text);

}  // namespace moeplan::model
