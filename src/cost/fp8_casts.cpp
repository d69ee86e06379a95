#include <moeplan/cost/fp8_casts.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {

CastBytesPerElement fp8_cast_bytes(model::Precision precision) {
  // Read 2 B (BF16), write 1 B row-wise and 1 B column-wise.
  constexpr double kCastTranspose = 2.0 + 1.0 + 1.0;
  switch (precision) {
    case model::Precision::Bf16:
      return {0, 0};
    case model::Precision::Fp8Delayed:
      return {kCastTranspose, kCastTranspose};
    case model::Precision::Fp8Tensorwise:
      // The amax of the current tensor is a reduction over it before the cast.
      return {kCastTranspose + 2.0, kCastTranspose + 2.0};
    case model::Precision::Fp8Blockwise:
      return {kCastTranspose + 2.0 * 4.0 / 128.0, kCastTranspose + 2.0 * 4.0 / 128.0};
    case model::Precision::Mxfp8:
      return {kCastTranspose + 2.0 * 1.0 / 32.0, kCastTranspose + 2.0 * 1.0 / 32.0};
  }
  return {0, 0};
}

void add_cast_elements(CastElements& e, const std::vector<GemmShape>& forward_gemms) {
  for (const GemmShape& g : forward_gemms) {
    e.inputs += g.batch * g.m * g.k;
    e.gradients += g.batch * g.m * g.n;
    e.weights += g.batch * g.k * g.n;
  }
}

void remove_fused_grouped_mlp_casts(CastElements& e, const std::vector<GemmShape>& routed) {
  MOEPLAN_CHECK(routed.size() == 3, "a gated FFN's three GEMMs (gate, up, down)");
  const GemmShape& gate = routed[0];
  const GemmShape& up = routed[1];
  const GemmShape& down = routed[2];
  e.inputs -= down.batch * down.m * down.k;
  e.gradients -= gate.batch * gate.m * gate.n + up.batch * up.m * up.n;
}

CastTimes fp8_cast_times(const CostModel& costs, model::Precision precision, const CastElements& e,
                         double micro_batches) {
  if (!model::is_fp8(precision)) return {};
  MOEPLAN_CHECK(micro_batches >= 1, "casts of at least one micro-batch");
  const CastBytesPerElement bytes = fp8_cast_bytes(precision);
  const double forward = e.inputs * bytes.activation + e.weights * bytes.weight / micro_batches;
  return {costs.compute(model::OpClass::Elementwise, forward),
          costs.compute(model::OpClass::Elementwise, e.gradients * bytes.activation)};
}

std::vector<GemmShape> attention_linear_gemms(const model::ModelSpec& m, double tokens, double tp) {
  MOEPLAN_CHECK(tp > 0 && tokens >= 0, "linear layers of a positive split");
  const double b = as_double(m.dtype_bytes);
  const double d = as_double(m.d_model);
  const double heads = as_double(m.num_heads);
  std::vector<GemmShape> out;
  if (!m.mla) {
    const double qkv = (heads + 2.0 * as_double(m.num_kv_heads)) * as_double(m.head_dim);
    out.push_back({tokens, qkv / tp, d, 1, b});
    out.push_back({tokens, d, heads * as_double(m.head_dim) / tp, 1, b});
    return out;
  }
  const model::MlaSpec& a = *m.mla;
  const double qk = as_double(a.qk_nope_head_dim + a.qk_rope_head_dim);
  if (a.q_lora_rank) {
    out.push_back({tokens / tp, as_double(*a.q_lora_rank), d, 1, b});
    out.push_back({tokens, heads * qk / tp, as_double(*a.q_lora_rank), 1, b});
  } else {
    out.push_back({tokens, heads * qk / tp, d, 1, b});
  }
  out.push_back({tokens / tp, as_double(a.kv_lora_rank + a.qk_rope_head_dim), d, 1, b});
  out.push_back({tokens, heads * as_double(a.qk_nope_head_dim + a.v_head_dim) / tp, as_double(a.kv_lora_rank), 1, b});
  out.push_back({tokens, d, heads * as_double(a.v_head_dim) / tp, 1, b});
  return out;
}

}  // namespace moeplan::cost
