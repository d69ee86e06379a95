#include <moeplan/cost/model_ends.hpp>

#include <optional>

#include <moeplan/core/units.hpp>
#include <moeplan/cost/gemm_shape_model.hpp>

namespace moeplan::cost {

EndTimes price_model_ends(const CostModel& costs, const model::ModelSpec& m, const BlockTokens& t,
                          const GroupShape& tp_group, bool fused_cross_entropy, double main_grad_bytes) {
  using model::OpClass;
  const double b = as_double(m.dtype_bytes);
  const double hidden_bytes = t.attention_tokens * as_double(m.d_model) * b;  // the gathered hidden states
  const auto elementwise = [&](double bytes) { return costs.compute(OpClass::Elementwise, bytes).value; };
  const auto collective = [&](OpClass op, double bytes) { return costs.communication(op, tp_group, bytes).value; };
  EndTimes out;
  // First stage: the vocabulary-parallel lookup, its output reduce-scattered
  // over tp (sequence parallelism); backward, the gradient all-gathered and
  // accumulated into the rows.
  const PassBytes embedding = embedding_bytes(m, t, main_grad_bytes);
  out.first_forward_ms = elementwise(embedding.forward) + collective(OpClass::ReduceScatter, hidden_bytes);
  out.first_backward_ms = elementwise(embedding.backward) + collective(OpClass::AllGather, hidden_bytes);
  // Last stage: the final norm's output all-gathered over tp, the LM head
  // GEMM (tokens x d times d x vocab / tp), the loss; the loss's max and its
  // predicted logit and exp-sum all-reduced over tp (fp32 per token: 4 B, then
  // 8 B), or under Transformer Engine's fused loss each rank's max, exp-sum
  // and target logit (3 fp32 per token) all-gathered over tp
  // (transformer_engine/pytorch/triton/cross_entropy.py, all_gather_into_tensor).
  // Backward: the head's input- and weight-gradient GEMMs, the input gradient
  // reduce-scattered.
  GemmShape head;
  head.m = t.attention_tokens;
  head.n = as_double(m.vocab_size) / t.tp;
  head.k = as_double(m.d_model);
  head.element_bytes = b;
  // The final norm and the loss on the elementwise line; Transformer Engine's
  // fused loss on the profile's own line for it when it has one
  // (CostModel::kernel_memory, docs/cost-model.md "The model's ends").
  const PassBytes output = output_layer_bytes(m, t, fused_cross_entropy);
  const PassBytes loss = cross_entropy_bytes(m, t, fused_cross_entropy);
  const auto output_ms = [&](double output_bytes, double loss_bytes) {
    const std::optional<Milliseconds> fused =
        fused_cross_entropy ? costs.kernel_memory(model::kFusedCrossEntropyKernel, loss_bytes) : std::nullopt;
    return fused ? elementwise(output_bytes - loss_bytes) + fused->value : elementwise(output_bytes);
  };
  const double loss_collectives =
      fused_cross_entropy ? collective(OpClass::AllGather, 12.0 * t.attention_tokens * t.tp)
                          : collective(OpClass::AllReduce, 4.0 * t.attention_tokens) +
                                collective(OpClass::AllReduce, 8.0 * t.attention_tokens);
  out.last_forward_ms =
      collective(OpClass::AllGather, hidden_bytes) + costs.gemm(head).value +
                       output_ms(output.forward, loss.forward) + loss_collectives;
  out.last_backward_ms = output_ms(output.backward, loss.backward) + costs.gemm(input_gradient_shape(head)).value +
                         costs.gemm(weight_gradient_shape(head, main_grad_bytes)).value +
                         collective(OpClass::ReduceScatter, hidden_bytes);
  out.head_forward_flops = gemm_flops(head);
  return out;
}

}  // namespace moeplan::cost
