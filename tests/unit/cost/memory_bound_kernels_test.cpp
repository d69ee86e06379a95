// The memory-bound kernels' bytes and the model's ends (memory_bound_kernels.hpp,
// model_ends.hpp): every expected value is counted by hand in the comment beside it.

#include <catch2/catch.hpp>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/memory_bound_kernels.hpp>
#include <moeplan/cost/model_ends.hpp>

#include "../test_support.hpp"

using namespace moeplan;

namespace {

// d 4, 2 heads and 2 KV heads of 2, bf16, rotary positions, vocabulary 8;
// 2 GELU experts of hidden 8, top-1; a dense MLP of hidden 8.
model::ModelSpec small_model() {
  model::ModelSpec m;
  m.num_layers = 1;
  m.d_model = 4;
  m.num_heads = 2;
  m.num_kv_heads = 2;
  m.head_dim = 2;
  m.ffn_hidden = 8;
  m.vocab_size = 8;
  m.norm_type = model::NormType::RmsNorm;
  m.dtype_bytes = 2;
  m.moe.num_experts = 2;
  m.moe.top_k = 1;
  m.moe.expert_type = model::FfnType::GeluFfn;
  m.moe.expert_ffn_hidden = 8;
  return m;
}

// 8 tokens a micro-batch at tp 2 (sequence parallel: 4 outside attention).
constexpr cost::BlockTokens kTokens{4, 8, 2};

}  // namespace

TEST_CASE("block_common_bytes: two norms, two residual adds, rotary q and k", "[cost][memory-bound]") {
  const model::ModelSpec m = small_model();
  // x = 4 tokens x d 4 = 16 elements of 2 B. Norms: forward 2 x (read + write)
  // = 2 x 2 x 16 x 2 = 128, backward 2 x 3 x 16 x 2 = 192. Residual adds: 2 x 3
  // x 16 x 2 = 192 each pass. Rotary: (2 + 2) heads / tp 2 x 2 = 4 elements per
  // token of the 8 the attention sees, read and written: 2 x 8 x 4 x 2 = 128 each pass.
  const cost::PassBytes b = cost::block_common_bytes(m, kTokens);
  CHECK(b.forward == Approx(128 + 192 + 128));  // 448
  CHECK(b.backward == Approx(192 + 192 + 128));  // 512
  // Learned positions: no rotary.
  model::ModelSpec learned = m;
  learned.max_position_embeddings = 16;
  CHECK(cost::block_common_bytes(learned, kTokens).forward == Approx(320));
}

TEST_CASE("moe_ffn_bytes: router, permutation and its inverse, expert activation", "[cost][memory-bound]") {
  const model::ModelSpec m = small_model();
  cost::MoeLayerSizes moe;
  moe.tokens_per_rank = 4;
  moe.expert_slots = 4;
  // Router: 4 tokens x 2 experts = 8 fp32 scores x 12 B = 96 each pass.
  // ep 2, one local expert (no sort): permute 2 x 4 copies x 4 x 2 B = 64,
  // unpermute (4 copies + 4 tokens) x 4 x 2 B = 64: 128 each pass. GELU over 4
  // slots x 8 = 32 elements: forward 2 x 32 x 2 = 128, backward 3 x 32 x 2 = 192.
  const cost::PassBytes ep2 = cost::moe_ffn_bytes(m, kTokens, moe, 2);
  CHECK(ep2.forward == Approx(96 + 128 + 128));   // 352
  CHECK(ep2.backward == Approx(96 + 128 + 192));  // 416
  // ep 1: both experts local, the received copies sorted by expert and back,
  // 2 x 4 slots x 4 x 2 B = 64 each way: +128 per pass.
  CHECK(cost::moe_ffn_bytes(m, kTokens, moe, 1).forward == Approx(352 + 128));
  // SwiGLU: forward 3 x 32 x 2 = 192, backward 5 x 32 x 2 = 320.
  model::ModelSpec swiglu = m;
  swiglu.moe.expert_type = model::FfnType::SwiGlu;
  const cost::PassBytes g = cost::moe_ffn_bytes(swiglu, kTokens, moe, 2);
  CHECK(g.forward == Approx(96 + 128 + 192));
  CHECK(g.backward == Approx(96 + 128 + 320));
  // Fused grouped MLP: the activation and its gradient run in the GEMMs'
  // epilogues, the router and permutations stay: 96 + 128 each pass.
  const cost::PassBytes fused = cost::moe_ffn_bytes(swiglu, kTokens, moe, 2, true);
  CHECK(fused.forward == Approx(96 + 128));
  CHECK(fused.backward == Approx(96 + 128));
  // A clamped GLU (GPT-OSS): two torch clamps of the 32-element halves (read
  // and write 32 x 2 B each: 256 B) and their concatenation (read and write 64
  // elements: 256 B) forward, 512 B; backward each clamp's gradient reads the
  // gradient and its input and writes one (3 x 32 x 2 B = 192 B each), 384 B.
  model::ModelSpec clamped = swiglu;
  clamped.moe.glu_clamp = 7.0;
  CHECK(cost::glu_clamp_bytes(clamped, moe, false).forward == Approx(512));
  CHECK(cost::glu_clamp_bytes(clamped, moe, false).backward == Approx(384));
  const cost::PassBytes c = cost::moe_ffn_bytes(clamped, kTokens, moe, 2);
  CHECK(c.forward == Approx(96 + 128 + 192 + 512));
  CHECK(c.backward == Approx(96 + 128 + 320 + 384));
  // The fused grouped MLP clamps in its kernel: nothing of its own.
  CHECK(cost::glu_clamp_bytes(clamped, moe, true).forward == 0);
  CHECK(cost::moe_ffn_bytes(clamped, kTokens, moe, 2, true).forward == Approx(96 + 128));
}

TEST_CASE("dense_ffn_bytes, embedding_bytes, output_layer_bytes, optimizer_step_bytes", "[cost][memory-bound]") {
  const model::ModelSpec m = small_model();
  // Dense GELU over 8 tokens x 8 / tp 2 = 32 elements: 128 forward, 192 backward.
  CHECK(cost::dense_ffn_bytes(m, kTokens).forward == Approx(128));
  CHECK(cost::dense_ffn_bytes(m, kTokens).backward == Approx(192));
  // Embedding: 8 tokens x 4 = 32 elements, read and written (2 x 32 x 2 = 128).
  // Backward: the rank's dense gradient of vocab 8 / tp 2 x d 4 = 16 elements
  // zeroed (2 B), then read (2 B) into fp32 main gradients read and written
  // (4 + 4 B): 16 x 12 = 192; each token's gradient read and added into its
  // row (2 + 2 + 2 B): 32 x 6 = 192. 384; with bf16 main gradients 16 x 8 + 192 = 320.
  CHECK(cost::embedding_bytes(m, kTokens, 4.0).forward == Approx(128));
  CHECK(cost::embedding_bytes(m, kTokens, 4.0).backward == Approx(384));
  CHECK(cost::embedding_bytes(m, kTokens, 2.0).backward == Approx(320));
  // Output: the final norm (64 forward, 96 backward) and 8 tokens x 8 / 2 = 32
  // logits at 38 B forward, 14 B backward.
  CHECK(cost::output_layer_bytes(m, kTokens, false).forward == Approx(64 + 38 * 32));   // 1280
  CHECK(cost::output_layer_bytes(m, kTokens, false).backward == Approx(96 + 14 * 32));  // 544
  // Transformer Engine's fused loss: the online softmax reads each logit (2 B),
  // the loss kernel reads it and writes its gradient (4 B); backward the
  // gradient scaled in place (4 B): 64 + 6 x 32 = 256, 96 + 4 x 32 = 224.
  CHECK(cost::output_layer_bytes(m, kTokens, true).forward == Approx(256));
  CHECK(cost::output_layer_bytes(m, kTokens, true).backward == Approx(224));
  // Adam: 4 + 16 + 12 + 6 = 38 B per parameter of the shard.
  CHECK(cost::optimizer_step_bytes(100) == Approx(3800));
  // Precision-aware (TE's FusedAdam with master-weight remainders): gradient
  // norm 4 + gradient 4 + bf16 weight and remainder read and written 8 + both
  // moments read and written 4 x 4 = 32 B; with bf16 moments 4 x 2: 24 B.
  CHECK(cost::optimizer_step_bytes(100, cost::MasterWeights::remainders, 4.0) == Approx(3200));
  CHECK(cost::optimizer_step_bytes(100, cost::MasterWeights::remainders, 2.0) == Approx(2400));
  // No master weights (bf16 weights updated in place): norm 2 + weight and
  // gradient read 4 + weight written 2 + both bf16 moments read and written
  // 4 x 2 = 16 B; with fp32 moments 4 x 4: 24 B.
  CHECK(cost::optimizer_step_bytes(100, cost::MasterWeights::none, 2.0) == Approx(1600));
  CHECK(cost::optimizer_step_bytes(100, cost::MasterWeights::none, 4.0) == Approx(2400));
}

TEST_CASE("gradient_prescaling and gradient_buffer_pass_bytes: Megatron-Core DDP's passes over held gradients",
          "[cost][memory-bound]") {
  // Without average_in_collective both buffers are multiplied by 1 / (dp x cp),
  // which is 1 (skipped) only with one data-parallel rank.
  CHECK(cost::gradient_prescaling(false, 8, 1).dense);
  CHECK(cost::gradient_prescaling(false, 8, 1).expert);
  CHECK_FALSE(cost::gradient_prescaling(false, 1, 1).dense);
  CHECK_FALSE(cost::gradient_prescaling(false, 1, 1).expert);
  // With it the collective averages: the dense factor is 1; the experts'
  // edp / (dp x cp) is 1 only when the two groups are as large (tp 2, ep 2:
  // edp = dp x cp), not for ep 8 over dp 8 (edp 1: 1 / 8).
  CHECK_FALSE(cost::gradient_prescaling(true, 8, 1).dense);
  CHECK(cost::gradient_prescaling(true, 8, 1).expert);
  CHECK_FALSE(cost::gradient_prescaling(true, 4, 4).expert);
  // 100 dense and 300 expert parameters of fp32 gradients (4 B): zeroing
  // writes 400 x 4 = 1600 B; the NaN check's norm reads 1600 more; scaling
  // both reads and writes them (3200); scaling only the experts 2 x 300 x 4 = 2400.
  const cost::GradientPrescaling both{true, true}, experts{false, true}, none{false, false};
  CHECK(cost::gradient_buffer_pass_bytes(100, 300, 4.0, false, none) == Approx(1600));
  CHECK(cost::gradient_buffer_pass_bytes(100, 300, 4.0, true, none) == Approx(3200));
  CHECK(cost::gradient_buffer_pass_bytes(100, 300, 4.0, true, both) == Approx(6400));
  CHECK(cost::gradient_buffer_pass_bytes(100, 300, 4.0, true, experts) == Approx(5600));
  // bf16 gradients (grad_reduce_in_bf16) halve every pass: 3200.
  CHECK(cost::gradient_buffer_pass_bytes(100, 300, 2.0, true, both) == Approx(3200));
}

TEST_CASE("price_model_ends: the embedding on the first stage, head and loss on the last", "[cost][memory-bound]") {
  using model::LinkClass;
  using model::OpClass;
  using testing::cost_line;
  const model::ModelSpec m = small_model();
  const model::CostProfileSpec profile{"toy",
                                       "toy",
                                       {cost_line(OpClass::Gemm, LinkClass::Local, 1, 0.0, 1e-3),
                                        cost_line(OpClass::Elementwise, LinkClass::Local, 1, 0.0, 1e-3),
                                        cost_line(OpClass::AllGather, LinkClass::Intra, 2, 0.0, 1e-3),
                                        cost_line(OpClass::ReduceScatter, LinkClass::Intra, 2, 0.0, 1e-3),
                                        cost_line(OpClass::AllReduce, LinkClass::Intra, 2, 0.0, 2e-3)},
                                       1.0};
  const cost::CostModel costs(profile);
  const cost::GroupShape tp{2, 2, 2, 1, 1};
  const cost::EndTimes e = cost::price_model_ends(costs, m, kTokens, tp, false, 4.0);
  // The gathered hidden states: 8 x 4 x 2 B = 64 B, 0.064 ms on AllGather or ReduceScatter.
  // First: the lookup's 128 B (0.128 ms) and its ReduceScatter; backward 384 B and the AllGather.
  CHECK(e.first_forward_ms == Approx(0.128 + 0.064));
  CHECK(e.first_backward_ms == Approx(0.384 + 0.064));
  // Last: AllGather 0.064, the head 2 x 8 x 4 x 8 / 2 = 256 FLOPs (0.256 ms),
  // 1280 B (1.280 ms), all-reduces of 4 x 8 = 32 B and 64 B at 2e-3 (0.064 +
  // 0.128). Backward: 544 B, two GEMMs of 256 FLOPs, the ReduceScatter.
  CHECK(e.last_forward_ms == Approx(0.064 + 0.256 + 1.280 + 0.064 + 0.128));  // 1.792
  CHECK(e.last_backward_ms == Approx(0.544 + 2 * 0.256 + 0.064));             // 1.120
  CHECK(e.head_forward_flops == Approx(256));
  // One rank of tp: no collectives, the whole vocabulary: head 512 FLOPs, 64 logits.
  const cost::BlockTokens alone{8, 8, 1};
  const cost::EndTimes one = cost::price_model_ends(costs, m, alone, cost::GroupShape{}, false, 4.0);
  CHECK(one.last_forward_ms == Approx(0.512 + (2 * 32 * 2 + 38 * 64) * 1e-3));  // 0.512 + 2.560
  // The fused loss at tp 2: AllGather 0.064, head 0.256, 256 B (0.256 ms), and
  // in place of the two all-reduces one AllGather of each rank's 3 fp32 per
  // token, 12 x 8 x 2 = 192 B gathered (0.192 ms). Backward 224 B (0.224), the
  // two GEMMs (0.512) and the ReduceScatter (0.064). The embedding is unchanged.
  const cost::EndTimes fused = cost::price_model_ends(costs, m, kTokens, tp, true, 4.0);
  CHECK(fused.last_forward_ms == Approx(0.064 + 0.256 + 0.256 + 0.192));  // 0.768
  CHECK(fused.last_backward_ms == Approx(0.224 + 0.512 + 0.064));         // 0.800
  CHECK(fused.first_forward_ms == Approx(e.first_forward_ms));
  // With the profile's own line for Transformer Engine's fused loss (alpha
  // 0.05 ms, 4e-3 ms per byte), the loss's 6 x 32 = 192 B forward and 4 x 32 =
  // 128 B backward move onto it (0.05 + 0.768 and 0.05 + 0.512 ms); the final
  // norm's 64 and 96 B stay on the elementwise line (0.064, 0.096 ms).
  model::CostProfileSpec with_loss = profile;
  model::LinearCostSpec loss_line = cost_line(OpClass::Elementwise, LinkClass::Local, 1, 0.05, 4e-3);
  loss_line.kernel = model::kFusedCrossEntropyKernel;
  with_loss.costs.push_back(loss_line);
  const cost::CostModel loss_costs(with_loss);
  const cost::EndTimes measured = cost::price_model_ends(loss_costs, m, kTokens, tp, true, 4.0);
  CHECK(measured.last_forward_ms == Approx(0.064 + 0.256 + 0.064 + 0.818 + 0.192));  // 1.394
  CHECK(measured.last_backward_ms == Approx(0.096 + 0.562 + 0.512 + 0.064));        // 1.234
  // Megatron's unfused loss is not that kernel: it stays on the elementwise line.
  const cost::EndTimes unfused = cost::price_model_ends(loss_costs, m, kTokens, tp, false, 4.0);
  CHECK(unfused.last_forward_ms == Approx(e.last_forward_ms));
  CHECK(unfused.last_backward_ms == Approx(e.last_backward_ms));
  // cross_entropy_bytes is the loss's part of output_layer_bytes: 192 and 128 B fused, 38 and 14 x 32 unfused.
  CHECK(cost::cross_entropy_bytes(m, kTokens, true).forward == Approx(192));
  CHECK(cost::cross_entropy_bytes(m, kTokens, true).backward == Approx(128));
  CHECK(cost::cross_entropy_bytes(m, kTokens, false).forward == Approx(38 * 32));
  CHECK(cost::cross_entropy_bytes(m, kTokens, false).backward == Approx(14 * 32));
}
