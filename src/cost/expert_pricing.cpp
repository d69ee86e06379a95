#include <moeplan/cost/expert_pricing.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {

int ffn_gemms(model::FfnType type) { return type == model::FfnType::GeluFfn ? 2 : 3; }
}  // namespace

std::vector<GemmShape> ffn_forward_gemms(model::FfnType type, double rows, double d, double hidden, double batch,
                                         double element_bytes) {
  std::vector<GemmShape> out;
  if (batch <= 0) return out;
  for (int i = 0; i + 1 < ffn_gemms(type); ++i) out.push_back({rows, hidden, d, batch, element_bytes});
  out.push_back({rows, d, hidden, batch, element_bytes});
  return out;
}

std::vector<GemmShape> routed_expert_forward_gemms(const model::ModelSpec& m, const model::ParallelSpec& p,
                                                   const MoeLayerSizes& s, double parts) {
  MOEPLAN_CHECK(parts > 0 && p.ep > 0 && p.etp > 0, "expert GEMMs of a positive share");
  const double local_experts = as_double(m.moe.num_experts) / as_double(p.ep);
  return ffn_forward_gemms(m.moe.expert_type, s.expert_slots * as_double(p.etp) / local_experts / parts,
                           as_double(m.d_model), as_double(m.moe.expert_ffn_hidden) / as_double(p.etp), local_experts,
                           as_double(m.dtype_bytes));
}

std::vector<GemmShape> expert_forward_gemms(const model::ModelSpec& m, const model::ParallelSpec& p,
                                            const MoeLayerSizes& s, double parts) {
  std::vector<GemmShape> out = routed_expert_forward_gemms(m, p, s, parts);
  const model::FfnType type = m.moe.expert_type;
  const double d = as_double(m.d_model);
  for (const GemmShape& g :
       ffn_forward_gemms(type, s.tokens_per_rank / parts, d, as_double(m.moe.shared_expert_ffn_hidden),
                         as_double(m.moe.num_shared_experts), as_double(m.dtype_bytes)))
    out.push_back(g);
  return out;
}

std::vector<GemmShape> expert_backward_gemms(const model::ModelSpec& m, const model::ParallelSpec& p,
                                             const MoeLayerSizes& s, double parts, double main_grad_bytes) {
  std::vector<GemmShape> out;
  for (const GemmShape& f : expert_forward_gemms(m, p, s, parts)) {
    out.push_back(input_gradient_shape(f));
    out.push_back(weight_gradient_shape(f, main_grad_bytes));
  }
  return out;
}

Milliseconds expert_ffn_time(const CostModel& costs, const model::ModelSpec& m, const model::ParallelSpec& p,
                             const MoeLayerSizes& s, bool backward, double parts, bool fp8, double main_grad_bytes) {
  if (!costs.gemm_shape_model())
    return expert_ffn_time(costs, (backward ? s.expert_backward_flops : s.expert_forward_flops) / parts,
                           ffn_gemms(m.moe.expert_type), fp8 ? model::OpClass::GemmFp8 : model::OpClass::Gemm);
  double ms = 0;
  for (GemmShape g : backward ? expert_backward_gemms(m, p, s, parts, main_grad_bytes)
                              : expert_forward_gemms(m, p, s, parts)) {
    g.fp8 = fp8;
    ms += costs.gemm(g).value;
  }
  return Milliseconds{ms};
}

LinearPassTimes linear_pass_times(const CostModel& costs, std::vector<GemmShape> forward, bool fp8,
                                  double main_grad_bytes) {
  for (GemmShape& g : forward) g.fp8 = fp8;
  if (!costs.gemm_shape_model()) {
    double flops = 0;
    for (const GemmShape& g : forward) flops += gemm_flops(g);
    const double ms = costs.compute(fp8 ? model::OpClass::GemmFp8 : model::OpClass::Gemm, flops).value;
    return {Milliseconds{ms}, Milliseconds{2 * ms}};
  }
  LinearPassTimes t{Milliseconds{0}, Milliseconds{0}};
  for (const GemmShape& g : forward) {
    t.forward.value += costs.gemm(g).value;
    t.backward.value +=
        costs.gemm(input_gradient_shape(g)).value + costs.gemm(weight_gradient_shape(g, main_grad_bytes)).value;
  }
  return t;
}

DenseFfnTimes dense_ffn_times(const CostModel& costs, const model::ModelSpec& m, double tokens, double tp,
                              bool fp8, double main_grad_bytes) {
  MOEPLAN_CHECK(tp > 0, "a positive tensor-parallel split");
  return linear_pass_times(costs,
                           ffn_forward_gemms(m.ffn_type, tokens, as_double(m.d_model), as_double(m.ffn_hidden) / tp,
                                             1.0, as_double(m.dtype_bytes)),
                           fp8, main_grad_bytes);
}

}  // namespace moeplan::cost
