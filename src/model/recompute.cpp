#include <moeplan/model/recompute.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::model {
namespace {

bool has_dense_block(const ModelSpec& m) {
  return m.is_dense() || std::any_of(m.moe_layer.begin(), m.moe_layer.end(), [](bool moe) { return !moe; });
}

// Why `module` has nothing to act on in `m` (empty: it has).
std::string missing_part(const ModelSpec& m, const std::string& module) {
  if (module == "mla_up_proj" && !m.mla) return "the model's attention has no MLA up-projections";
  if ((module == "moe" || module == "moe_act") && m.is_dense()) return "the model is dense: it has no MoE layer";
  if (module == "shared_experts" && (m.is_dense() || m.moe.num_shared_experts == 0))
    return "the model has no shared experts";
  if (module == "mlp" && !has_dense_block(m)) return "every block of the model is MoE: there is no dense MLP";
  return "";
}

}  // namespace

const std::vector<std::string>& recompute_module_names() {
  static const std::vector<std::string> names{"core_attn",   "moe_act", "layernorm",     "mla_up_proj",
                                              "mlp",         "moe",     "shared_experts"};
  return names;
}

std::vector<std::string> recomputed_modules(const RecomputeSpec& r) {
  if (r.granularity != "selective") return {};
  if (r.modules.empty()) return {"core_attn"};
  return r.modules;
}

bool recomputes_module(const RecomputeSpec& r, const std::string& module) {
  const std::vector<std::string> modules = recomputed_modules(r);
  return std::find(modules.begin(), modules.end(), module) != modules.end();
}

void validate_recompute(const ModelSpec& m, const RecomputeSpec& r) {
  if (r.granularity != "none" && r.granularity != "selective" && r.granularity != "full")
    throw_input_error("schedule.recompute",
                      fmt::format("must be none, selective or full, got {}", quoted_for_error(r.granularity)));
  if (!r.modules.empty() && r.granularity != "selective")
    throw_input_error("schedule.recompute_modules",
                      fmt::format("modules are recomputed with schedule.recompute selective, not {}", r.granularity));
  const std::vector<std::string>& names = recompute_module_names();
  for (std::size_t i = 0; i < r.modules.size(); ++i) {
    const std::string& module = r.modules[i];
    if (std::find(names.begin(), names.end(), module) == names.end())
      throw_input_error("schedule.recompute_modules", fmt::format("unknown module {} (one of {})",
                                                                  quoted_for_error(module), fmt::join(names, ", ")));
    if (std::find(r.modules.begin(), r.modules.begin() + static_cast<std::ptrdiff_t>(i), module) !=
        r.modules.begin() + static_cast<std::ptrdiff_t>(i))
      throw_input_error("schedule.recompute_modules", fmt::format("{} is listed twice", module));
    if (const std::string why = missing_part(m, module); !why.empty())
      throw_input_error("schedule.recompute_modules", fmt::format("{} cannot act: {}", module, why));
  }
  if (recomputes_module(r, "moe"))
    for (const char* inside : {"moe_act", "shared_experts"})
      if (recomputes_module(r, inside))
        throw_input_error("schedule.recompute_modules",
                          fmt::format("{} is recomputed inside moe already: list one of them", inside));
  if (r.method != "uniform" && r.method != "block")
    throw_input_error("schedule.recompute_method",
                      fmt::format("must be uniform or block, got {}", quoted_for_error(r.method)));
  const std::int64_t least = r.method == "uniform" ? 1 : 0;
  if (r.num_layers < least)
    throw_input_error("schedule.recompute_num_layers",
                      fmt::format("must be >= {} with recompute_method {}, got {}", least, r.method, r.num_layers));
}

std::string recompute_text(const RecomputeSpec& r) {
  if (r.granularity == "selective" && !r.modules.empty())
    return fmt::format("selective:{}", fmt::join(r.modules, "+"));
  if (r.granularity == "full" && (r.method != "uniform" || r.num_layers != 1))
    return fmt::format("full:{}:{}", r.method, r.num_layers);
  return r.granularity;
}

RecomputeSpec parse_recompute(const std::string& text, const std::string& field) {
  RecomputeSpec r;
  const std::size_t colon = text.find(':');
  r.granularity = text.substr(0, colon);
  if (r.granularity != "none" && r.granularity != "selective" && r.granularity != "full")
    throw_input_error(field, fmt::format("expected none, selective[:MODULE+...] or full[:METHOD:LAYERS], got {}",
                                         quoted_for_error(text)));
  if (colon == std::string::npos) return r;
  const std::string rest = text.substr(colon + 1);
  if (r.granularity == "none" || rest.empty())
    throw_input_error(field, fmt::format("nothing may follow {} here, got {}", r.granularity, quoted_for_error(text)));
  if (r.granularity == "selective") {
    std::size_t start = 0;
    while (start <= rest.size()) {
      const std::size_t plus = rest.find('+', start);
      r.modules.push_back(rest.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
      if (plus == std::string::npos) break;
      start = plus + 1;
    }
    return r;
  }
  const std::size_t second = rest.find(':');
  if (second == std::string::npos)
    throw_input_error(field, fmt::format("expected full:METHOD:LAYERS, got {}", quoted_for_error(text)));
  r.method = rest.substr(0, second);
  const std::string layers = rest.substr(second + 1);
  if (layers.empty() || layers.size() > 6 || !std::all_of(layers.begin(), layers.end(), [](char ch) {
        return ch >= '0' && ch <= '9';
      }))
    throw_input_error(field, fmt::format("expected full:METHOD:LAYERS with LAYERS a count, got {}",
                                         quoted_for_error(text)));
  r.num_layers = std::stoll(layers);
  return r;
}

}  // namespace moeplan::model
