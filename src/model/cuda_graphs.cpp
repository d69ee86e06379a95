#include <moeplan/model/cuda_graphs.hpp>

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <moeplan/core/error.hpp>

namespace moeplan::model {
namespace {

constexpr const char* kField = "schedule.cuda_graphs";

std::vector<std::string> split_plus(const std::string& text) {
  std::vector<std::string> out;
  std::string::size_type start = 0;
  while (true) {
    const auto end = text.find('+', start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

}  // namespace

std::string cuda_graphs_text(const CudaGraphs& g) {
  if (g.full_iteration) return "full_iteration";
  std::vector<std::string> modules;
  if (g.attn) modules.emplace_back("attn");
  if (g.moe_router) modules.emplace_back("moe_router");
  if (g.moe_preprocess) modules.emplace_back("moe_preprocess");
  return modules.empty() ? "none" : fmt::format("{}", fmt::join(modules, "+"));
}

CudaGraphs parse_cuda_graphs(const std::string& text) {
  CudaGraphs g;
  if (text == "none") return g;
  if (text == "full_iteration") {
    g.full_iteration = true;
    return g;
  }
  for (const std::string& module : split_plus(text)) {
    if (module == "full_iteration" || module == "none")
      throw_input_error(kField, fmt::format("{} stands alone: it joins no module with '+'", module));
    bool* flag = module == "attn"             ? &g.attn
                 : module == "moe_router"     ? &g.moe_router
                 : module == "moe_preprocess" ? &g.moe_preprocess
                                              : nullptr;
    if (flag == nullptr)
      throw_input_error(kField, fmt::format("unknown part {} (none, full_iteration, or attn, moe_router and "
                                            "moe_preprocess joined by '+')",
                                            quoted_for_error(module)));
    if (*flag) throw_input_error(kField, fmt::format("{} is listed twice", module));
    *flag = true;
  }
  if (g.moe_preprocess && !g.moe_router)
    throw_input_error(kField, "moe_preprocess is captured with the router: it needs moe_router");
  // The host time of the router and of the dispatcher's preprocessing is one
  // part of the host-issue model (docs/cost-model.md, "Host time"): a graph of
  // the router alone cannot be priced.
  if (g.moe_router && !g.moe_preprocess)
    throw_input_error(kField, "moe_router without moe_preprocess cannot be priced: the router and the dispatcher's "
                              "preprocessing are one part of the host's issue time (capture both or neither)");
  return g;
}

}  // namespace moeplan::model
