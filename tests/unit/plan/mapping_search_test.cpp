#include <catch2/catch.hpp>

#include <algorithm>

#include <moeplan/plan/scenario_run.hpp>
#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/validate.hpp>
#include <moeplan/plan/mapping_search.hpp>
#include <moeplan/cost/memory.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/model/family_rules.hpp>
#include <moeplan/model/model_stats.hpp>
#include <moeplan/model/cuda_graphs.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/plan/open_knobs.hpp>

#include "../test_support.hpp"
#include "folding_toy.hpp"

using namespace moeplan;
using model::LinkClass;
using model::OpClass;

using moeplan::testing::mapping;
using moeplan::testing::toy_ends_ms;
using moeplan::testing::toy_scenario;

namespace {

// The toy with two blocks, the first dense (a GELU FFN of hidden 8), the second MoE.
model::ScenarioSpec two_block_toy() {
  model::ScenarioSpec s = toy_scenario();
  s.model.num_layers = 2;
  s.model.ffn_hidden = 8;
  s.model.ffn_type = model::FfnType::GeluFfn;
  s.model.moe.first_k_dense = 1;
  s.model.moe_layer = {false, true};
  return s;
}

// The toy with its MoE block replaced by a dense GELU FFN of hidden 8 (no moe: a dense model).
model::ScenarioSpec dense_toy() {
  model::ScenarioSpec s = toy_scenario();
  s.model.moe = model::MoeSpec{};
  s.model.moe_layer = {false};
  s.model.ffn_hidden = 8;
  s.model.ffn_type = model::FfnType::GeluFfn;
  return s;
}

}  // namespace

TEST_CASE("plan::search_mappings prices a dense model: no experts, etp = tp (toy, by hand)", "[plan][folding][dense]") {
  // The toy below with its MoE block replaced by a dense GELU FFN of hidden 8
  // (no moe: a dense model). Mappings: tp x cp = 2 (dp = 1), ep = 1 and etp = tp
  // (no experts to place), so tp 2 cp 1 and tp 1 cp 2, in either search mode.
  // Compute per iteration, the same in both (each splits the work over 2 GPUs):
  //   projections 512 FLOPs and causal core 396 as the toy's; the FFN on the
  //   local tokens over tp, 8 x 2 GEMMs x 2 d F / 2 = 512 (tp 2: 8 tokens;
  //   tp 1 cp 2: 4 tokens x 2 x 2 x 4 x 8 = 512); no router.
  //   forward 512 + 396 + 512 = 1420, backward 2 (512 + 396) + 2 x 512 = 2840: 4.260 ms.
  // Communication: tp 2: the attention's and the FFN's AllGather + ReduceScatter
  //   (0.128 ms each pair) in each pass: 4 x 0.128 = 0.512 ms; no optimizer
  //   traffic (dp x cp = 1). tp 1 cp 2: one ring step of K and V, 2 x 4
  //   tokens x 2 heads x 2 x 2 B = 64 B over P2P = 0.64 ms beside half the
  //   core (0.396 / 2 = 0.198 ms): 0.442 ms exposed forward; backward K, V
  //   and their gradients, 1.28 ms beside 0.396 ms: 0.884 ms; and the
  //   distributed optimizer over dp x cp = 2: attention 64 + norms 8 + FFN 2 d
  //   F = 64 + embedding and LM head 64 + final norm 4 = 204 parameters x 6 B
  //   = 1224 B = 1.224 ms.
  //   tp 2 cp 1: 4.260 + 0.512                   = 4.772
  //   tp 1 cp 2: 4.260 + 0.442 + 0.884 + 1.224   = 6.810
  // and the model's ends (folding_toy.hpp, toy_ends_ms): tp 2 over 8 tokens,
  // tp 1 over 4 (cp 2).
  model::ScenarioSpec s = dense_toy();
  REQUIRE(s.model.is_dense());
  const cost::CostModel costs(*s.profile);
  for (const char* mode : {"folded", "coupled"}) {
    INFO(mode);
    const auto found = plan::search_mappings(s, costs, mode, 2);
    REQUIRE(found.size() == 2);
    CHECK(found[0].config.tp == 2);
    CHECK(found[0].config.cp == 1);
    CHECK(found[0].config.etp == 2);
    CHECK(found[0].iteration_ms == Approx(4.772 + toy_ends_ms(8, 2)));
    CHECK(found[1].config.tp == 1);
    CHECK(found[1].config.cp == 2);
    CHECK(found[1].config.etp == 1);
    CHECK(found[1].iteration_ms == Approx(6.810 + toy_ends_ms(4, 1)));
    for (const plan::MappingResult& r : found) {
      CHECK(r.config.ep == 1);
      CHECK(r.breakdown.a2a_ms == 0);
      // The stage's FFN compute (the dense FFN here): forward 0.512, backward 2 x 0.512.
      CHECK(r.breakdown.moe_compute_ms == Approx(1.536));
    }
    CHECK(found[1].breakdown.dp_ms == Approx(1.224));
  }
}

TEST_CASE("plan::price_mapping: each CP exchange's exposed time (dense toy, by hand)", "[plan][folding][cp]") {
  // The dense toy of the case above at tp 1 cp 2: 4.260 ms of compute and the
  // optimizer's 1.224 ms, plus per pass what the exchange leaves exposed. The
  // rank's tensors: 4 tokens x 2 heads x k 2 x 2 B = Q 32 B, K and V 64 B, O 32 B.
  //   p2p: 0.442 forward + 0.884 backward (the case above)         -> 6.810
  //   a2a: AlltoAll of Q, K, V (96 B) and of O (32 B) at 1e-3 ms per byte
  //        = 0.128 ms each pass                                     -> 5.740
  //   allgather: AllGather of the gathered K, V (2 x 64 = 128 B) 0.128
  //        forward; again and a ReduceScatter of their gradients
  //        (0.128) backward                                         -> 5.868
  //   a2a+p2p 2 x 1: the a2a over both ranks, a ring of one         -> 5.740
  //   a2a+p2p 1 x 2: no a2a, the ring of two (p2p)                  -> 6.810
  model::ScenarioSpec s = dense_toy();
  const cost::CostModel costs(*s.profile);
  const auto iteration = [&](const char* type, std::vector<std::int64_t> sizes) {
    model::ScenarioSpec t = s;
    t.parallel.cp_comm_type = type;
    t.parallel.hierarchical_cp_sizes = std::move(sizes);
    return plan::price_mapping(t, costs, mapping(1, 2, 1, 1, 1)).iteration_ms;
  };
  // Each plus the model's ends at tp 1 over 4 tokens (toy_ends_ms).
  const double ends = toy_ends_ms(4, 1);
  CHECK(iteration("p2p", {}) == Approx(6.810 + ends));
  CHECK(iteration("a2a", {}) == Approx(5.740 + ends));
  CHECK(iteration("allgather", {}) == Approx(5.868 + ends));
  CHECK(iteration("a2a+p2p", {2, 1}) == Approx(5.740 + ends));
  CHECK(iteration("a2a+p2p", {1, 2}) == Approx(6.810 + ends));
  // Sizes whose product is not cp, and a2a with heads that do not split
  // (2 heads over cp 4 is not possible on 2 GPUs: one K/V head instead).
  CHECK_THROWS_WITH(iteration("a2a+p2p", {2, 2}), Catch::Contains("multiply to cp 2"));
  model::ScenarioSpec gqa = s;
  gqa.model.num_kv_heads = 1;
  gqa.parallel.cp_comm_type = "a2a";
  CHECK_THROWS_WITH(plan::price_mapping(gqa, costs, mapping(1, 2, 1, 1, 1)),
                    Catch::Contains("2 query and 1 K/V heads per tp rank (tp 1) do not split over 2"));
}

TEST_CASE("plan::search_mappings: folding EP into TP beats every coupled mapping (toy, by hand)", "[plan][folding]") {
  // The space. One layer: pp = vpp = 1. Global batch 1: micro-batch 1 and
  // dp = 1, so tp x cp = 2. Two GPUs: ep x etp divides 2. That leaves
  //   tp 2 cp 1 with (ep, etp) = (2, 1), (1, 1), (1, 2), and
  //   tp 1 cp 2 with (ep, etp) = (2, 1), (1, 1), (1, 2)  -> 6 folded mappings.
  // Coupled (etp = tp, ep divides dp x cp): tp 2 cp 1 ep 1 etp 2; tp 1 cp 2
  // etp 1 with ep 1 or 2  -> 3 coupled mappings.
  //
  // Compute, the same in every mapping (each splits the work over 2 GPUs):
  //   projections 2 (2 d h k + 2 d g k) x 8 tokens / 2 = 2 x 64 x 8 / 2 = 512 FLOPs,
  //   causal core (4 h k + 3 h) x s (s + 1) / 2 / 2 = 22 x 36 / 2 = 396 FLOPs,
  //   router 2 x 4 tokens x d E = 64, experts 4 tokens x 2 GEMMs x 2 d F = 512 (backward 1024).
  //   forward 512 + 396 + 64 + 512 = 1484, backward 2 (512 + 396 + 64) + 1024 = 2968:
  //   4.452 ms per iteration.
  // Communication per pass (forward = backward), in bytes x 1e-3 ms:
  //   TP (tp 2): AllGather + ReduceScatter of 8 tokens x d x 2 B = 64 B each -> 0.128 ms.
  //   CP (cp 2): one ring step of K and V, 2 x 4 tokens x g k x 2 B = 64 B at
  //     1e-2 ms/B = 0.64 ms beside half the core (0.198 ms): 0.442 ms exposed;
  //     backward K, V and their gradients (1.28 ms) beside 0.396 ms: 0.884 ms.
  //   EP (ep 2): dispatch + combine of 4 tokens x d x 2 B = 32 B -> 0.064 ms.
  //   ETP (etp 2): AllGather + ReduceScatter of 2 x 32 B -> 0.128 ms.
  // Distributed optimizer, RS of 4 B + AG of 2 B per parameter on groups of 2:
  //   dense (dp x cp = 2 only when cp = 2; tp = 1): attention 64 + norms 8 +
  //     router 8 + embedding and LM head 2 x V d = 64 + final norm 4 = 148
  //     parameters -> 6 x 148 = 888 B = 0.888 ms.
  //   experts (edp = 2 / (ep etp) = 2 only for ep = etp = 1): 2 experts x 2 d F
  //     = 128 parameters -> 768 B = 0.768 ms.
  // Iterations:
  //   tp 2 cp 1 ep 2 etp 1: 4.452 + 2 (0.128 + 0.064)         = 4.836  folded only
  //   tp 2 cp 1 ep 1 etp 2: 4.452 + 2 (0.128 + 0.128)         = 4.964  coupled
  //   tp 2 cp 1 ep 1 etp 1: 4.452 + 2 (0.128) + 0.768         = 5.476  folded only
  //   tp 1 cp 2 ep 2 etp 1: 4.452 + 1.326 + 2 (0.064) + 0.888 = 6.794  coupled
  //   tp 1 cp 2 ep 1 etp 2: 4.452 + 1.326 + 2 (0.128) + 0.888 = 6.922  folded only
  //   tp 1 cp 2 ep 1 etp 1: 4.452 + 1.326 + 0.888 + 0.768     = 7.434  coupled
  // Folding wins by putting EP on the two GPUs that TP uses, which coupled
  // forbids (ep must divide dp x cp = 1 when tp = 2).
  const model::ScenarioSpec s = toy_scenario();
  const cost::CostModel costs(*s.profile);
  const auto folded = plan::search_mappings(s, costs, "folded", 2);
  const auto coupled = plan::search_mappings(s, costs, "coupled", 2);
  REQUIRE(folded.size() == 6);
  REQUIRE(coupled.size() == 3);
  struct Expected {
    std::int64_t tp, cp, ep, etp;
    double iteration_ms;
  };
  auto check = [](const std::vector<plan::MappingResult>& got, const std::vector<Expected>& want) {
    for (std::size_t i = 0; i < want.size(); ++i) {
      INFO("rank " << i);
      CHECK(got[i].config.tp == want[i].tp);
      CHECK(got[i].config.cp == want[i].cp);
      CHECK(got[i].config.ep == want[i].ep);
      CHECK(got[i].config.etp == want[i].etp);
      CHECK(got[i].config.pp == 1);
      CHECK(got[i].config.micro_batch == 1);
      CHECK(got[i].fits);
      CHECK(got[i].iteration_ms == Approx(want[i].iteration_ms));
    }
  };
  // Each plus the model's ends (toy_ends_ms): tp 2 over 8 tokens, tp 1 over 4 (cp 2).
  const double tp2 = toy_ends_ms(8, 2), cp2 = toy_ends_ms(4, 1);
  check(folded, {{2, 1, 2, 1, 4.836 + tp2},
                 {2, 1, 1, 2, 4.964 + tp2},
                 {2, 1, 1, 1, 5.476 + tp2},
                 {1, 2, 2, 1, 6.794 + cp2},
                 {1, 2, 1, 2, 6.922 + cp2},
                 {1, 2, 1, 1, 7.434 + cp2}});
  check(coupled, {{2, 1, 1, 2, 4.964 + tp2}, {1, 2, 2, 1, 6.794 + cp2}, {1, 2, 1, 1, 7.434 + cp2}});
  // The optimizer step of the cp = 2 mappings runs on dp x cp = 2 ranks even though dp = 1.
  CHECK(folded[3].config.dp == 1);
  CHECK(folded[3].breakdown.dp_ms == Approx(0.888));
  CHECK(folded[5].breakdown.dp_ms == Approx(0.888 + 0.768));
}

TEST_CASE("plan::price_mapping: MFU from its formula (toy, by hand)", "[plan][folding]") {
  // The winning toy mapping (tp 2, ep 2) takes 4.836 ms (derivation above)
  // and its ends 1.216 ms (toy_ends_ms): 6.052 ms.
  // Model FLOPs per token: 2 x (LM head V d = 32 + attention weights 2 d h k +
  // 2 d g k = 64 + router d E = 8 + top-1 expert 2 d F = 64) = 336, plus causal
  // attention 2 x layers x s x h k = 2 x 1 x 8 x 4 = 64: 400. One iteration
  // trains 8 tokens: 3 x 8 x 400 = 9600 FLOPs, on 2 GPUs of 1e6 FLOP/s.
  const model::ScenarioSpec s = toy_scenario();
  const cost::CostModel costs(*s.profile);
  const plan::MappingResult r = plan::price_mapping(s, costs, mapping(2, 1, 1, 2, 1));
  REQUIRE(r.iteration_ms == Approx(6.052));
  CHECK(r.mfu == Approx(9600.0 / (6.052e-3 * 2 * 1e6)));  // 0.79312
  // Held: attention 64 / 2 + norms 8 + router 8 + embedding and LM head
  // 2 x 32 / 2 + final norm 4 = 84 dense; 1 expert of 64 parameters.
  const cost::HeldParams held = cost::held_params(s.model, r.config);
  CHECK(held.dense == Approx(84));
  CHECK(held.expert == Approx(64));
}

TEST_CASE("plan::price_mapping: dense blocks (first_k_dense) cost and hold their own stage (toy, by hand)",
          "[plan][folding]") {
  // The toy with two blocks, the first dense (DeepSeek's first_k_dense_replace:
  // 1), a GELU FFN of hidden 8, on pp 2 (tp, cp, ep, etp 1; dp = edp = 1): stage
  // 0 holds the dense block, stage 1 the MoE block. Per block and micro-batch
  // (8 tokens): attention projections 2 x 64 x 8 = 1024 FLOPs + core (4 h k +
  // 3 h) x 8 x 9 / 2 = 22 x 36 = 792: 1.816 ms. MoE block: router 2 x 8 x 4 x 2
  // = 128, expert 8 x 2 GEMMs x 2 x 4 x 8 = 1024 FLOPs: forward 2.968 ms,
  // backward 5.936 ms (one-rank groups: no AlltoAll). Dense block: FFN 8 x 2 x 2
  // x 4 x 8 = 1024 FLOPs: forward 2.84 ms, backward 5.68 ms. P2P of 8 x 4 x 2 =
  // 64 bytes: 0.64 ms. One micro-batch: F0 + send + F1 + B1 + send + B0 =
  // 2.84 + 0.64 + 2.968 + 5.936 + 0.64 + 5.68 = 18.704 ms (every block MoE:
  // 19.088 ms), plus the model's ends: the embedding on stage 0 (nothing at
  // tp 1), the LM head on stage 1 (toy_ends_ms(8, 1) = 1.536 ms), both on the
  // one micro-batch's path.
  model::ScenarioSpec s = two_block_toy();
  const cost::CostModel costs(*s.profile);
  const plan::MappingResult r = plan::price_mapping(s, costs, mapping(1, 1, 2, 1, 1));
  CHECK(r.iteration_ms == Approx(18.704 + toy_ends_ms(8, 1)));
  model::ScenarioSpec all_moe = s;
  all_moe.model.moe_layer = {true, true};
  CHECK(plan::price_mapping(all_moe, costs, mapping(1, 1, 2, 1, 1)).iteration_ms == Approx(19.088 + toy_ends_ms(8, 1)));
  // Held: stage 0 = attention 64 + norms 8 + dense FFN 2 x 4 x 8 = 64 + embedding
  // 32 = 168; stage 1 = attention 64 + norms 8 + router 8 + LM head 32 + final
  // norm 4 = 116 dense and 2 experts of 64 = 128: the larger stage, 244.
  const cost::HeldParams held = cost::held_params(s.model, r.config);
  CHECK(held.dense == Approx(116));
  CHECK(held.expert == Approx(128));
  // Memory: 244 x (2 + 4) + 116 x 12 + 128 x 12 (dp x cp = edp = 1) + one
  // micro-batch's activations: 34 x 8 x 4 = 1088 B per block x (15 + 19 x 8 /
  // 16) / 34 for either block (expert top-1 x 8 / 4d = dense 8 / 4d = 0.5):
  // 784; the MoE block (stage 1, the larger) also keeps its pre-MLP norm's
  // output, 2 x 1088 / 34 = 64 B: 848; and, the last stage, one
  // micro-batch's logits and their fp32 copy, (2 + 4) x 8 tokens x 8 = 384 B.
  // Transformer Engine's cached dummy weight gradients, one bf16 tensor per
  // distinct linear weight shape of a stage: QKV (2 + 2 x 2) x 2 = 12 x 4 = 48,
  // output projection 4 x 4 = 16, and the FFN's 8 x 4 and 4 x 8 (the dense
  // FFN's on stage 0, one expert's on stage 1: the same shapes) = 64: 128
  // elements x 2 B = 256 B on either stage.
  CHECK(r.memory_bytes_per_gpu == Approx(244 * 6 + 116 * 12 + 128 * 12 + 848 + 384 + 256));
  // Transformer Engine's fused loss keeps the logits alone, their gradient
  // written in their place: 2 x 64 = 128 B where the fp32 copy made 384.
  model::ScenarioSpec fused = s;
  fused.schedule.cross_entropy_fusion = "te";
  CHECK(plan::price_mapping(fused, costs, mapping(1, 1, 2, 1, 1)).memory_bytes_per_gpu ==
        Approx(244 * 6 + 116 * 12 + 128 * 12 + 848 + 128 + 256));
  // The precision-aware optimizer keeps the fp32 master weight as a 2-byte
  // remainder: 10 B of optimizer state a parameter where 12 were, on the 116
  // dense and 128 expert parameters of stage 1 (dp x cp = edp = 1): 488 B
  // less; bf16 moments too (6 B): 1464 B less.
  model::ScenarioSpec aware = s;
  aware.schedule.precision_aware_optimizer = true;
  CHECK(plan::price_mapping(aware, costs, mapping(1, 1, 2, 1, 1)).memory_bytes_per_gpu ==
        Approx(r.memory_bytes_per_gpu - 244 * 2));
  aware.schedule.optimizer_moments_dtype = "bf16";
  CHECK(plan::price_mapping(aware, costs, mapping(1, 1, 2, 1, 1)).memory_bytes_per_gpu ==
        Approx(r.memory_bytes_per_gpu - 244 * 6));
  // The breakdown is the MoE stage's: 3 x 1.816 ms of attention, 1.024 + 2.048 + 3 x 0.128 of MoE compute.
  CHECK(r.breakdown.attention_ms == Approx(3 * 1.816));
  CHECK(r.breakdown.moe_compute_ms == Approx(1.024 + 2.048 + 3 * 0.128));
}

TEST_CASE("plan::held_params: MLA's down-projections are whole on every tp rank (toy, by hand)", "[plan][folding]") {
  // The toy (d 4, 2 heads) with MLA q_lora 2, kv_lora 2, nope 1, rope 1, v 2:
  // q_a 4 x 2 = 8 and kv_a 4 x (2 + 1) = 12 weights and the latent norms 2 + 2
  // whole on each rank (24); q_b 2 x 2 x 2 = 8, kv_b 2 x 2 x 3 = 12, O 2 x 2 x
  // 4 = 16 split over tp 2 (18). Held at tp 2, ep 2: 42 + norms 8 + router 8 +
  // embedding and LM head 2 x 32 / 2 + final norm 4 = 94 (84 with the plain attention).
  model::ScenarioSpec s = toy_scenario();
  s.model.mla = model::MlaSpec{2, 2, 1, 1, 2};
  CHECK(cost::held_params(s.model, mapping(2, 1, 1, 2, 1)).dense == Approx(94));
}

TEST_CASE("cost::dummy_wgrad_bytes: one bf16 tensor per distinct linear weight shape (toy, by hand)",
          "[plan][folding][memory]") {
  // The toy: d 4, 2 heads and 2 KV heads of 2, GELU experts of 8 (and the
  // two-block toy's dense GELU FFN of 8). Plain attention at tp 1: QKV (2 + 2
  // x 2) x 2 = 12 x 4 = 48, O 4 x 4 = 16; an expert's 8 x 4 and 4 x 8 = 64:
  // 128 elements, 256 B.
  model::ScenarioSpec s = two_block_toy();
  CHECK(cost::dummy_wgrad_bytes(s.model, mapping(1, 1, 1, 1, 1), true, false) == Approx(256));
  // The dense FFN's matrices have the expert's shapes: no new tensor.
  CHECK(cost::dummy_wgrad_bytes(s.model, mapping(1, 1, 1, 1, 1), true, true) == Approx(256));
  // A gated (SwiGLU) dense FFN stacks gate and up: 16 x 4 = 64 more elements, 128 B.
  s.model.ffn_type = model::FfnType::SwiGlu;
  CHECK(cost::dummy_wgrad_bytes(s.model, mapping(1, 1, 1, 1, 1), true, true) == Approx(256 + 128));
  // tp 2 halves attention's (QKV 6 x 4, O 4 x 2: 32); etp 2 the expert's to
  // 4 x 4 and 4 x 4, one shape, so one tensor (16): 48 elements, 96 B.
  s = two_block_toy();
  CHECK(cost::dummy_wgrad_bytes(s.model, mapping(2, 1, 1, 1, 2), true, false) == Approx(96));
  // MLA (q_lora 2, kv_lora 2, nope 1, rope 1, v 2) at tp 1: q down 2 x 4 = 8,
  // q up 2 x 2 x 2 = 8, kv down (2 + 1) x 4 = 12, kv up 2 x 3 x 2 = 12, O 4 x 4
  // = 16, and the expert's 64: 120 elements, 240 B.
  s.model.mla = model::MlaSpec{2, 2, 1, 1, 2};
  CHECK(cost::dummy_wgrad_bytes(s.model, mapping(1, 1, 1, 1, 1), true, false) == Approx(240));
}

TEST_CASE("plan::price_mapping: CP over AlltoAll keeps the attention output twice (toy, by hand)",
          "[plan][folding][memory]") {
  // The toy at tp 1 cp 2: 4 local tokens x d 4 = 16 B per Korthikanti unit.
  // Transformer Engine's a2a attention saves its output in the heads-split
  // layout too (out_part), beside the projection's input: 2 h v / d = 2 x 2 x
  // 2 / 4 = 2 units, 32 B more per block, one micro-batch in flight. The p2p
  // ring keeps one copy; recomputing the core keeps none of it.
  model::ScenarioSpec s = toy_scenario();
  const cost::CostModel costs(*s.profile);
  const cost::MappingConfig c = mapping(1, 2, 1, 1, 1);
  const double ring = plan::price_mapping(s, costs, c).memory_bytes_per_gpu;
  s.parallel.cp_comm_type = "a2a";
  CHECK(plan::price_mapping(s, costs, c).memory_bytes_per_gpu == Approx(ring + 32));
  s.schedule.recompute.granularity = "selective";
  s.schedule.recompute.modules = {"core_attn"};
  CHECK(plan::price_mapping(s, costs, c).memory_bytes_per_gpu == Approx(ring));
}

TEST_CASE("plan::price_mapping: dense gradients and optimizer shards over dp x cp, shared expert included",
          "[plan][folding]") {
  // Qwen2-57B-A14B (models/qwen2-57b-a14b.textproto: d 3584, 28 layers, 28
  // heads and 4 KV heads of 128, QKV bias, RMSNorm, 64 SwiGLU experts of 2560,
  // top-8, one shared SwiGLU expert of 20480, vocabulary 151936, untied) on 32
  // H100 (4 nodes of 8), tp 2 cp 2 pp 4 ep 4 etp 1: dp = 32 / 16 = 2,
  // edp = 32 / 16 = 2. Megatron's order tp-cp-ep-dp-pp: the dp x cp group is
  // ranks {0, 2, 4, 6} (4 ranks, one node), edp is {0, 4} (2 ranks, one node).
  const model::ScenarioSpec s = io::load_scenario("folding-qwen2-57b-a14b-64", {{"cluster.num_nodes", "4"}});
  const cost::CostModel costs(*s.profile);
  const cost::MappingConfig c = mapping(2, 2, 4, 4, 1);
  const plan::MappingResult r = plan::price_mapping(s, costs, c);
  REQUIRE(r.config.dp == 2);
  REQUIRE(r.config.edp == 2);

  // Parameters of one GPU of the first or last stage (7 layers):
  const double d = 3584;
  const double attention = (2 * d * 3584 + 2 * d * 512 + 3584 + 2 * 512) / 2;  // Q, O; K, V (GQA); QKV bias; / tp
  const double norms = 2 * d;                                                  // whole on every TP rank
  const double router = d * 64;
  const double shared = 3 * d * 20480 / 2;  // SwiGLU, / tp: 110,100,480
  const double ends = 151936 * d / 2 + d;   // LM head / tp and the final norm (the larger end)
  const double dense = 7 * (attention + norms + router + shared) + ends;  // 1,147,408,640
  const double expert = 7 * (64.0 / 4) * 3 * d * 2560;                    // 3,082,813,440
  // dgx-h100-datasheet: intra-node AllGather and ReduceScatter at NVLink 4's
  // 450 GB/s x 0.8 bus bandwidth and 0.015 ms startup; n ranks move (n - 1) / n
  // of the buffer (nccl-tests). Gradients are fp32 (RS of 4 B per parameter),
  // parameters bf16 (AG of 2 B).
  auto ag_rs_ms = [](double bytes, double n) { return 0.015 + bytes * (n - 1) / n / (450e9 * 0.8) * 1e3; };
  const double dense_ms = ag_rs_ms(4 * dense, 4) + ag_rs_ms(2 * dense, 4);     // 14.38 ms
  const double expert_ms = ag_rs_ms(4 * expert, 2) + ag_rs_ms(2 * expert, 2);  // 25.72 ms
  // The Adam update of the rank's shard (memory_bound_kernels.hpp: 38 B per
  // parameter) on the datasheet's elementwise line: 0.5 x 3350 GB/s, 0.01 ms
  // startup; dense parameters sharded over dp x cp = 4, experts over edp = 2.
  auto adam_ms = [](double params) { return 0.01 + 38 * params / (3350e9 * 0.5) * 1e3; };
  const double update_ms = adam_ms(dense / 4 + expert / 2);  // 41.49 ms
  // Megatron-Core DDP's passes over the gradient buffers the GPU holds
  // (docs/cost-model.md, "Gradient buffer passes"): zeroed (4 B), checked for
  // NaN (4 B read, Megatron-LM's default) and pre-scaled by 1 / (dp x cp) (4 B
  // read and written) per parameter held, on the profile's gradient_buffer
  // line: 0.835 x 3350 GB/s (the cluster file's measured share), 0.01 ms startup.
  auto buffer_ms = [](double bytes) { return bytes / (3350e9 * 0.835) * 1e3; };
  const double passes_ms = 0.01 + buffer_ms(16 * (dense + expert));  // 24.21 ms
  CHECK(r.breakdown.dp_ms == Approx(dense_ms + expert_ms + update_ms + passes_ms));  // 105.79 ms

  // The shared expert's bytes are in the dense sync: without it, the dense
  // collectives lose 7 x 110,100,480 parameters x 6 B over the 4 dp x cp ranks.
  model::ScenarioSpec no_shared = s;
  no_shared.model.moe.num_shared_experts = 0;
  const plan::MappingResult r0 = plan::price_mapping(no_shared, costs, c);
  // Its update loses them too (38 B each, over the 4 ranks of its shard).
  CHECK(r.breakdown.dp_ms - r0.breakdown.dp_ms ==
        Approx(7 * shared * 6 * 3 / 4 / (450e9 * 0.8) * 1e3 + 38 * 7 * shared / 4 / (3350e9 * 0.5) * 1e3 +
               buffer_ms(16 * 7 * shared)));  // 18.4 ms

  // Without the NaN check the passes read the held gradients once less (4 B
  // each); with average_in_collective the dense buffer is not pre-scaled (the
  // collective averages), the experts' still is, by edp / (dp x cp) = 2 / 4.
  model::ScenarioSpec unchecked = s;
  unchecked.schedule.check_for_nan_in_grad = false;
  CHECK(r.breakdown.dp_ms - plan::price_mapping(unchecked, costs, c).breakdown.dp_ms ==
        Approx(buffer_ms(4 * (dense + expert))));
  model::ScenarioSpec averaged = s;
  averaged.schedule.average_in_collective = true;
  CHECK(r.breakdown.dp_ms - plan::price_mapping(averaged, costs, c).breakdown.dp_ms == Approx(buffer_ms(8 * dense)));

  // Memory: 2 B bf16 weight + 4 B fp32 gradient per parameter held, 12 B of
  // fp32 master weight and Adam moments sharded over dp x cp = 4 (dense) and
  // edp = 2 (experts); activations (Korthikanti et al. 2023, flash attention)
  // per layer 34 x 2048 local tokens x d / tp, the MLP's 19 of the 34 scaled
  // to the routed experts (top-8 x 2560 / 4d x tp / etp = 20 / 7) plus the
  // shared expert (20480 / 4d = 10 / 7), and the pre-MLP norm's output the
  // router reads (2): 2048 x d / 2 x (15 + 2 + 19 x 30 / 7) = 361,234,432 B,
  // x 7 layers x 4 micro-batches in flight (1F1B, pp 4).
  const double activations = 2048 * d / 2 * (15 + 2 + 19.0 * 30 / 7) * 7 * 4;
  // Transformer Engine's cached dummy weight gradients, a bf16 tensor per
  // distinct linear weight shape on the rank: QKV (28 + 2 x 4) x 128 / tp 2 =
  // 2304 x d, O d x 1792, one expert's 5120 x d and d x 2560 (etp 1), the
  // shared expert's 20480 x d and d x 10240 (tp 2): 152,305,664 elements.
  const double dummies = 2 * (2304 * d + d * 1792 + 5120 * d + d * 2560 + 20480 * d + d * 10240);  // 304,611,328
  const double bytes =
      (dense + expert) * 6 + dense * 12 / 4 + expert * 12 / 2 + activations + dummies;  // 57,739,614,464
  CHECK(r.memory_bytes_per_gpu == Approx(bytes));
  CHECK(r.fits);  // 53.3 GiB <= 0.9 x 80 GiB

  // Megatron-LM's --grad-reduce-in-bf16 (Megatron-Bridge's performance
  // recipes): gradients held and reduce-scattered at 2 B, not 4. Each
  // ReduceScatter moves half its bytes (dense over 4 ranks: 3/4 of 2 B x dense
  // less; experts over 2: 1/2 of 2 B x expert less, at 360 GB/s): 8.57 ms
  // less; memory 2 B per parameter held less (8.46 GB). The weights' AllGather
  // and the Adam update are as before.
  model::ScenarioSpec bf16 = s;
  bf16.schedule.grad_reduce_in_bf16 = true;
  const plan::MappingResult rb = plan::price_mapping(bf16, costs, c);
  // The gradient buffer passes move 2 B less per parameter and pass: 16 B -> 8 B.
  CHECK(r.breakdown.dp_ms - rb.breakdown.dp_ms ==
        Approx(2 * dense * 3 / 4 / (450e9 * 0.8) * 1e3 + 2 * expert / 2 / (450e9 * 0.8) * 1e3 +
               buffer_ms(8 * (dense + expert))));
  CHECK(r.memory_bytes_per_gpu - rb.memory_bytes_per_gpu == Approx((dense + expert) * 2));
  // A model of 4-byte weights keeps fp32 gradients: the flag is refused, naming it
  // (without the profile, whose half-precision lines would be refused first).
  model::ScenarioSpec fp32 = bf16;
  fp32.model.dtype_bytes = 4;
  fp32.profile.reset();
  std::string field;
  try {
    model::validate(fp32);
  } catch (const Error& e) {
    field = e.field();
  }
  CHECK(field == "schedule.grad_reduce_in_bf16");
  fp32.schedule.grad_reduce_in_bf16 = false;
  CHECK_NOTHROW(model::validate(fp32));
}

TEST_CASE("plan::search_mappings: coupled mappings obey Megatron v0.9, results are sorted and thread-independent",
          "[plan][folding]") {
  const model::ScenarioSpec s = io::load_scenario("folding-qwen2-57b-a14b-64");
  const cost::CostModel costs(*s.profile);
  const auto folded = plan::search_mappings(s, costs, "folded", 2);
  const auto coupled = plan::search_mappings(s, costs, "coupled", 2);
  REQUIRE(!folded.empty());
  REQUIRE(!coupled.empty());
  for (const auto& r : coupled) {
    CHECK(r.config.etp == r.config.tp);                     // before folding
    CHECK((r.config.dp * r.config.cp) % r.config.ep == 0);  // EP inside DP x CP
  }
  // Sorted: fitting mappings first, by iteration time.
  for (std::size_t i = 1; i < folded.size(); ++i) {
    if (folded[i].fits) CHECK(folded[i - 1].fits);
    if (folded[i].fits) CHECK(folded[i - 1].iteration_ms <= folded[i].iteration_ms);
  }
  // Results do not depend on the thread count.
  const auto one = plan::search_mappings(s, costs, "folded", 1);
  REQUIRE(one.size() == folded.size());
  CHECK(one.front().iteration_ms == folded.front().iteration_ms);
  CHECK(one.front().config.tp == folded.front().config.tp);
  CHECK(one.front().config.ep == folded.front().config.ep);
}

TEST_CASE("plan::price_mapping: invalid mappings and memory limits", "[plan][folding]") {
  const model::ScenarioSpec s = io::load_scenario("folding-mixtral-8x22b-128");
  const cost::CostModel costs(*s.profile);
  const cost::MappingConfig c = mapping(4, 1, 4, 8, 1);
  const plan::MappingResult r = plan::price_mapping(s, costs, c);
  CHECK(r.config.dp == 8);   // 128 / (4 x 4)
  CHECK(r.config.edp == 4);  // 128 / (1 x 8 x 4)
  // Held by a GPU of the last stage: 14 layers x (attention / tp + 2 norms + router
  // + 1 expert / etp) + LM head / tp + final norm (Mixtral: d 6144, 48 heads and
  // 8 KV heads of 128, RMSNorm, no biases, 8 SwiGLU experts of 16384, vocabulary 32000).
  const double attention = (2.0 * 6144 * 6144 + 2.0 * 6144 * 1024) / 4;
  const double expert = 3.0 * 6144 * 16384;
  CHECK(cost::params_per_gpu(s.model, r.config) ==
        Approx(14 * (attention + 2 * 6144 + 6144.0 * 8 + expert) + 32000.0 * 6144 / 4 + 6144));
  // A GPU too small for anything: nothing fits, and the planner says so.
  model::ScenarioSpec tiny = s;
  tiny.cluster.gpu.memory_bytes = 1e9;
  CHECK_FALSE(plan::price_mapping(tiny, costs, c).fits);
  CHECK_THROWS_AS(plan::price_mapping(s, costs, cost::MappingConfig{3, 1, 1, 1, 1, 1, 1, 0, 0}), Error);
}

TEST_CASE("plan::price_mapping: the head rule and its message are scenario validation's", "[plan][folding]") {
  // Mixtral 8x22B (48 query, 8 KV heads) at tp 16: the search and simulate of a
  // folding scenario must refuse it with the words `validate` uses.
  model::ScenarioSpec s = io::load_scenario("folding-mixtral-8x22b-128");
  const cost::CostModel costs(*s.profile);
  std::string priced, validated;
  try {
    plan::price_mapping(s, costs, mapping(16, 1, 4, 8, 1));
  } catch (const Error& e) {
    CHECK(e.field() == "parallelism.tp");
    priced = e.reason();
  }
  s.parallel.tp = 16;
  s.parallel.dp = 2;
  try {
    model::validate(s);
  } catch (const Error& e) {
    CHECK(e.field() == "parallelism.tp");
    validated = e.reason();
  }
  CHECK_FALSE(priced.empty());
  CHECK(priced == validated);
  CHECK_THAT(priced, Catch::Contains("num_heads 48") && Catch::Contains("num_kv_heads 8") && Catch::Contains("tp 16"));
}

TEST_CASE("plan::price_mapping: recomputation trades memory", "[plan][folding]") {
  const cost::MappingConfig c = mapping(4, 1, 4, 8, 1);
  auto memory = [&](const char* recompute) {
    const model::ScenarioSpec s = io::load_scenario("folding-mixtral-8x22b-128", {{"schedule.recompute", recompute}});
    const cost::CostModel costs(*s.profile);
    return plan::price_mapping(s, costs, c).memory_bytes_per_gpu;
  };
  CHECK(memory("full") < memory("selective"));
  // Flash attention (the default) stores no scores: recomputing the attention
  // core (selective) saves nothing over none.
  CHECK(memory("selective") == memory("none"));
}

TEST_CASE("plan::price_mapping: an unfused attention kernel stores 5 a s^2 b bytes per layer without recompute",
          "[plan][folding][memory]") {
  // The two-block toy above (pp 2, one micro-batch): each stage holds one
  // block and one micro-batch in flight. Unfused attention with recompute
  // none adds each block's scores, softmax and dropout mask (Korthikanti et
  // al. 2023): 5 x a 2 heads x s 8 x s 8 x 1 byte (2-byte elements) = 640 B.
  model::ScenarioSpec s = two_block_toy();
  const cost::CostModel costs(*s.profile);
  auto memory = [&](const char* recompute, const char* backend) {
    model::ScenarioSpec t = s;
    t.schedule.recompute.granularity = recompute;
    t.schedule.attention_backend = backend;
    return plan::price_mapping(t, costs, mapping(1, 1, 2, 1, 1)).memory_bytes_per_gpu;
  };
  const double flash = memory("none", "flash");
  CHECK(flash == Approx(244 * 6 + 116 * 12 + 128 * 12 + 848 + 384 + 256));  // the case above's bytes
  CHECK(memory("none", "unfused") == Approx(flash + 640));
  CHECK(memory("selective", "unfused") == Approx(flash));  // selective recomputes the attention core
}

TEST_CASE("every family's memory check is the folding planner's memory model", "[plan][memory]") {
  // Second formulation: the folding planner prices the scenario's own mapping,
  // memory included; ScenarioRun's check (used by simulate and plan of every
  // family) must give the same bytes and the same verdict.
  const moeplan::plan::ScenarioRun run(moeplan::io::load_scenario("folding-mixtral-8x22b-128"));
  const moeplan::plan::MappingResult priced = moeplan::plan::price_mapping(
      run.spec(), run.costs(), moeplan::cost::MappingConfig::from(run.spec().parallel, run.spec().workload.micro_batch_size));
  CHECK(run.memory_bytes_per_gpu() == Approx(priced.memory_bytes_per_gpu).epsilon(1e-12));
  CHECK(run.fits_in_memory() == priced.fits);
  // 73.6 GiB on an 80 GiB H100: (80 GiB - the 0.267 GiB CUDA context) / 1.04
  // (the allocator's median overhead) = 76.66 GiB usable: it fits, but by less
  // than the memory model's largest under-prediction (73.6 / (1 - 0.066) = 78.8).
  CHECK(run.fits_in_memory());
  CHECK(moeplan::cost::tight_in_memory(run.spec().cluster.gpu, run.memory_bytes_per_gpu()));
}

TEST_CASE("cost::usable_memory_bytes: the GPU less the CUDA context, over the allocator's overhead (by hand)",
          "[cost][memory]") {
  // 80 GiB = 85,899,345,920 B; less 287,047,680 B of context = 85,612,298,240 B;
  // over 1.04: 82,319,517,538.46 B.
  moeplan::model::GpuSpec gpu;
  gpu.memory_bytes = 80.0 * 1024 * 1024 * 1024;
  const double usable = moeplan::cost::usable_memory_bytes(gpu);
  CHECK(usable == Approx(82319517538.46).epsilon(1e-12));
  CHECK(moeplan::cost::fits_in_memory(gpu, 82319517538.0));
  CHECK_FALSE(moeplan::cost::fits_in_memory(gpu, 82319517539.0));
  // Tight: a peak under-predicted by 6.6% of itself is bytes / 0.934: tight
  // above usable x 0.934 = 76,886,429,380.92 B, up to usable.
  CHECK_FALSE(moeplan::cost::tight_in_memory(gpu, 76886429380.0));
  CHECK(moeplan::cost::tight_in_memory(gpu, 76886429381.0));
  CHECK_FALSE(moeplan::cost::tight_in_memory(gpu, 82319517539.0));  // over: does not fit, not tight
  // A GPU smaller than the context holds nothing.
  gpu.memory_bytes = 1e8;
  CHECK(moeplan::cost::usable_memory_bytes(gpu) == 0.0);
}

TEST_CASE("plan::enumerate_mappings tries TP and ETP up to the NVLink domain, not the node", "[plan][folding]") {
  // The toy on 8 nodes of 2 GPUs (16): without a domain TP stops at the node's 2; with an
  // NVLink domain of 8 GPUs (four nodes), at 8, and never beyond (16 would leave the domain).
  model::ScenarioSpec s = toy_scenario();
  s.cluster.num_nodes = 8;
  auto largest = [&](const model::ScenarioSpec& spec, std::int64_t cost::MappingConfig::*knob) {
    std::int64_t most = 0;
    for (const cost::MappingConfig& m : plan::enumerate_mappings(spec, "folded")) most = std::max(most, m.*knob);
    return most;
  };
  CHECK(largest(s, &cost::MappingConfig::tp) == 2);
  CHECK(largest(s, &cost::MappingConfig::etp) == 2);
  s.cluster.nvlink_domain_gpus = 8;
  CHECK(largest(s, &cost::MappingConfig::tp) == 8);
  CHECK(largest(s, &cost::MappingConfig::etp) == 8);
}

namespace {

// The toy under an FP8 recipe: FP8 GEMMs at twice the BF16 rate (0.5e-3 ms
// per FLOP), memory-bound kernels at 1e-4 ms per byte, a GPU with FP8 tensor cores.
model::ScenarioSpec fp8_toy(model::Precision precision) {
  model::ScenarioSpec s = toy_scenario();
  s.workload.precision = precision;
  s.cluster.gpu.peak_flops_per_s_fp8 = 2e6;
  s.profile->costs.push_back(moeplan::testing::cost_line(OpClass::GemmFp8, LinkClass::Local, 1, 0.0, 0.5e-3));
  // The casts' line, 1e-4 ms per byte: the toy's memory-bound kernels cost
  // time too, in BF16 as in FP8, so the cases below compare the two on it.
  for (model::LinearCostSpec& line : s.profile->costs)
    if (line.op == OpClass::Elementwise) line.beta_ms_per_unit = 1e-4;
  return s;
}

}  // namespace

TEST_CASE("plan::price_mapping under FP8: linear GEMMs at the FP8 line, casts on the elementwise line (toy, by hand)",
          "[plan][folding][fp8]") {
  // tp 2 cp 1 ep 2 etp 1, 4.836 ms in BF16 (above). FP8 runs the projections
  // (512 FLOPs forward) and the experts (512 forward, 1024 backward) at half
  // the time; the core (396) and the router (64) stay on their lines:
  //   forward 0.256 + 0.396 + 0.064 + 0.256 = 0.972, backward 2 (0.256 + 0.396 + 0.064) + 0.512 = 1.944.
  // Casts: the linear layers' GEMMs on 8 tokens (tp 2, sequence parallel: gathered) —
  //   QKV [8 x 4] x [4 x (2 + 2 x 2) 2 / 2 = 6]: inputs 32, output gradients 48, weights 24;
  //   O [8 x 2] x [2 x 4]: 16, 32, 8; the local expert on 4 slots, [4 x 4] x [4 x 8]
  //   and [4 x 8] x [8 x 4]: 16 + 32, 32 + 16, 32 + 32.
  //   inputs 96, gradients 128, weights 96 (one micro-batch: all its weights' cast).
  //   delayed scaling, 4 B per element: forward (96 + 96) x 4 = 768 B = 0.0768 ms,
  //   backward 128 x 4 = 512 B = 0.0512 ms; tensorwise (current scaling) 6 B: 1.5 x.
  // Communication as in BF16: 2 (0.128 + 0.064) = 0.384 ms.
  //   delayed:    0.972 + 1.944 + 0.128 + 0.384 = 3.428
  //   tensorwise: 0.972 + 1.944 + 0.192 + 0.384 = 3.492
  // against 4.836 in BF16: -1.408 and -1.344. Both also run the same
  // memory-bound kernels, model ends and optimizer update (the same bytes on
  // the same line), which the differences leave out.
  const cost::MappingConfig c = mapping(2, 1, 1, 2, 1);
  const model::ScenarioSpec bf16 = fp8_toy(model::Precision::Bf16);
  const plan::MappingResult base = plan::price_mapping(bf16, cost::CostModel(*bf16.profile), c);
  const model::ScenarioSpec delayed = fp8_toy(model::Precision::Fp8Delayed);
  const plan::MappingResult d = plan::price_mapping(delayed, cost::CostModel(*delayed.profile), c);
  CHECK(d.iteration_ms - base.iteration_ms == Approx(3.428 - 4.836));
  // The breakdown's parts hold their casts: attention 3 x (0.256 + 0.396) +
  // its casts (48 + 32) x 4 B and 80 x 4 B = 0.032 + 0.032 ms, against 3 x (0.512 + 0.396) in BF16.
  CHECK(d.breakdown.attention_ms - base.breakdown.attention_ms == Approx(3 * 0.652 + 0.064 - 3 * 0.908));
  const model::ScenarioSpec tensorwise = fp8_toy(model::Precision::Fp8Tensorwise);
  CHECK(plan::price_mapping(tensorwise, cost::CostModel(*tensorwise.profile), c).iteration_ms - base.iteration_ms ==
        Approx(3.492 - 4.836));
  // Memory: FP8 keeps each linear weight's two FP8 copies, +2 B x (attention
  // 64 / tp 2 + one local expert 2 d F = 64) = +192 B, and saves the linear
  // inputs in FP8: of the layer's 34 s b h / tp = 544 B, attention 15/34 -> 13/34
  // (240 -> 208) and the MLP's 19/34 (x top-k cap F / 4d x tp / etp = 1) keeps
  // 14/19 (304 -> 224): -112 B. One micro-batch in flight: +80 B.
  CHECK(d.memory_bytes_per_gpu - base.memory_bytes_per_gpu == Approx(80.0));
}

TEST_CASE("an FP8 precision needs FP8 tensor cores, MX ones for mxfp8, and a profile that prices them",
          "[plan][folding][fp8]") {
  const auto refused = [](const model::ScenarioSpec& s) {
    try {
      model::validate(s);
    } catch (const Error& e) {
      return e.field() + ": " + e.reason();
    }
    return std::string("accepted");
  };
  model::ScenarioSpec s = fp8_toy(model::Precision::Fp8Tensorwise);
  s.parallel.tp = 2;
  s.parallel.dp = 1;
  s.parallel.ep = 2;
  s.parallel.edp = 1;
  CHECK(refused(s) == "accepted");
  model::ScenarioSpec no_fp8 = s;
  no_fp8.cluster.gpu.peak_flops_per_s_fp8 = 0;
  CHECK_THAT(refused(no_fp8), Catch::StartsWith("workload.precision: fp8_tensorwise needs FP8 tensor cores"));
  model::ScenarioSpec mx = s;
  mx.workload.precision = model::Precision::Mxfp8;
  CHECK_THAT(refused(mx), Catch::Contains("cluster.gpu.mx_formats"));
  mx.cluster.gpu.mx_formats = true;
  CHECK(refused(mx) == "accepted");
  model::ScenarioSpec no_line = s;
  std::erase_if(no_line.profile->costs, [](const model::LinearCostSpec& l) { return l.op == OpClass::Elementwise; });
  CHECK_THAT(refused(no_line), Catch::Contains("elementwise line"));
  model::ScenarioSpec fp32 = s;
  fp32.model.dtype_bytes = 4;
  fp32.cluster.gpu.peak_flops_per_s_fp32 = 1e6;
  CHECK_THAT(refused(fp32), Catch::Contains("4-byte elements"));
  model::ScenarioSpec foldmoe = s;
  foldmoe.schedule.family = "foldmoe";
  foldmoe.options.push_back("workload.precision");
  CHECK_THAT(refused(foldmoe), Catch::Contains("cannot act"));
}

TEST_CASE("plan::price_mapping with a pipeline layout: uneven stages in the 1F1B schedule (second formulation)",
          "[plan][folding][layout]") {
  // Three MoE blocks over pp = 2 (tp = cp = ep = etp = 1 on the toy's 2 GPUs),
  // two micro-batches (global batch 2, dp 1). With f and b one block's forward
  // and backward and p the stage-to-stage transfer, 1F1B on two stages runs
  // stage 0: F1, F2, B1, B2 and stage 1: F1, B1, F2, B2, each waiting for its
  // input. Layout [1, 2] (stage 0 one block, stage 1 two):
  //   S1 F1 ends f + p + 2f; B1 + 2b; F2 + 2f; B2 + 2b = 5f + p + 4b;
  //   S0 B1 starts at 3f + 2p + 2b, ends + b; B2 starts at 5f + 2p + 4b: 5f + 2p + 5b.
  // The last chunk also runs the LM head and loss, hf forward and hb backward
  // (stage 1's F and B grow by them; the embedding costs nothing at tp 1),
  // twice on the path: 5f + 2p + 5b + 2 (hf + hb).
  // Layout [2, 1]: the same recurrence with the other block counts (below).
  // dp x cp = edp = 1: no optimizer traffic, and its update ~1e-10 ms.
  model::ScenarioSpec s = toy_scenario();
  s.model.num_layers = 3;
  s.model.moe_layer = {true, true, true};
  s.workload.global_batch_size = 2;
  const cost::CostModel costs(*s.profile);
  cost::MappingConfig c = mapping(1, 1, 2, 1, 1);
  c.chunk_layers = {1, 2};
  const cost::LayerPrices l = cost::price_layers(s, costs, c);
  REQUIRE(l.micro_batches == 2);
  REQUIRE(l.optimizer_ms == Approx(0).margin(1e-9));
  const double f = l.layer_forward_ms, b = l.layer_backward_ms, p = l.p2p_ms;
  const double hf = l.ends.last_forward_ms, hb = l.ends.last_backward_ms;
  REQUIRE(hf + hb == Approx(toy_ends_ms(8, 1)));
  REQUIRE(p > 0);
  CHECK(plan::run_pipeline(l, costs, s.limits).iteration_ms == Approx(5 * f + 2 * p + 5 * b + 2 * (hf + hb)));
  // [2, 1]: S0 F1 [0, 2f], F2 [2f, 4f]; S1 F1 from 2f + p, B1 then F2 (input at 4f + p), B2;
  // S0 B1 after F2 and S1's B1 + p; S0 B2 after its B1 and S1's B2 + p.
  // Stage 1's chunk is one block and the head: f + hf forward, b + hb backward.
  const double s1_f1_end = 3 * f + p + hf, s1_b1_end = s1_f1_end + b + hb;
  const double s1_f2_end = std::max(4 * f + p, s1_b1_end) + f + hf, s1_b2_end = s1_f2_end + b + hb;
  const double s0_b1_end = std::max(4 * f, s1_b1_end + p) + 2 * b;
  const double s0_b2_end = std::max(s0_b1_end, s1_b2_end + p) + 2 * b;
  c.chunk_layers = {2, 1};
  CHECK(plan::price_mapping(s, costs, c).iteration_ms == Approx(s0_b2_end));
  // Stage blocks and memory follow the layout: stage 0 of [2, 1] holds two blocks.
  CHECK(cost::stage_blocks(s.model, c, 0).moe == 2);
  CHECK(cost::stage_blocks(s.model, c, 1).moe == 1);
  // A layout of other than pp x vpp stages or num_layers blocks says so.
  c.chunk_layers = {1, 1, 1};
  CHECK_THROWS_WITH(cost::price_layers(s, costs, c), Catch::Contains("3 stages, and pp x vpp = 2 x 1 = 2"));
  c.chunk_layers = {1, 1};
  CHECK_THROWS_WITH(cost::price_layers(s, costs, c), Catch::Contains("2 blocks, and the model has 3 layers"));
}

TEST_CASE("plan::enumerate_mappings splits layers that do not divide by Megatron's uneven layout", "[plan][layout]") {
  // Three blocks on 2 GPUs: pp 2 does not divide 3, so its mappings carry the
  // uneven split [2, 1] (ceil 2, the deficit from the last stage); pp 1 none.
  model::ScenarioSpec s = toy_scenario();
  s.model.num_layers = 3;
  s.model.moe_layer = {true, true, true};
  bool saw_pp2 = false;
  for (const cost::MappingConfig& c : plan::enumerate_mappings(s, "folded")) {
    if (c.pp == 2) {
      saw_pp2 = true;
      CHECK(c.chunk_layers == std::vector<std::int64_t>{2, 1});
    } else {
      CHECK(c.chunk_layers.empty());
    }
  }
  CHECK(saw_pp2);
}

TEST_CASE("plan::price_mapping prices a sliding window's pairs, and refuses it where it is not modelled",
          "[plan][folding][window]") {
  // The toy's one block with a window of 3 tokens over its 8: queries 1..8 see
  // min(j, 3) = 1 + 2 + 3 x 6 = 21 pairs, not 36. Core FLOPs at tp 2: 22 x 21 / 2
  // = 231 (0.231 ms on the attention line) instead of 396: forward once and
  // backward twice, 3 x (0.396 - 0.231) = 0.495 ms less than 4.836 (tp 2 cp 1 ep 2 etp 1),
  // plus the model's ends (toy_ends_ms(8, 2)).
  CHECK(cost::windowed_pairs(8, 8, 3) == 21);
  CHECK(cost::windowed_pairs(4, 8, 3) == 12);  // the last 4 queries: 3 each
  CHECK(cost::windowed_pairs(8, 8, 100) == cost::causal_pairs(8, 8));
  model::ScenarioSpec s = toy_scenario();
  s.model.sliding_window = 3;
  s.model.window_layer = {true};
  // Twice the peak: only MFU's denominator (the toy runs at MFU 0.99 unwindowed).
  s.cluster.gpu.peak_flops_per_s_bf16 = 2e6;
  const cost::CostModel costs(*s.profile);
  CHECK(plan::price_mapping(s, costs, mapping(2, 1, 1, 2, 1)).iteration_ms == Approx(4.836 - 0.495 + toy_ends_ms(8, 2)));
  // Under context parallelism the ring passes every earlier block: not built for a window.
  CHECK_THROWS_WITH(plan::price_mapping(s, costs, mapping(1, 2, 1, 2, 1)),
                    Catch::Contains("context parallelism with sliding-window attention"));
  // A layer schedule prices causal attention over the whole sequence: refused by name.
  model::ScenarioSpec foldmoe = s;
  foldmoe.schedule.family = "foldmoe";
  CHECK_THROWS_WITH(model::family_rules("foldmoe").validate(foldmoe), Catch::Contains("sliding-window attention"));
}

TEST_CASE("plan::price_mapping prices the attention core's backward on its pass and head dim's line (toy, by hand)",
          "[plan][folding][attention]") {
  // The toy's core at tp 2: 396 FLOPs forward, 792 backward, on the generic
  // line (1e-3 ms per FLOP): 0.396 and 0.792 ms of its 4.836 (tp 2 cp 1 ep 2 etp 1).
  // A backward line for the toy's head dim 2, 0.1 ms + 2e-3 ms per FLOP, prices
  // the backward core at 0.1 + 1.584 = 1.684 ms: 0.892 more. A forward line for
  // head dim 3 is another model's and changes nothing.
  model::ScenarioSpec s = toy_scenario();
  REQUIRE(s.model.head_dim == 2);
  model::LinearCostSpec backward = moeplan::testing::cost_line(OpClass::Attention, LinkClass::Local, 1, 0.1, 2e-3);
  backward.attention_pass = model::AttentionPass::Backward;
  backward.head_dim = 2;
  model::LinearCostSpec other = moeplan::testing::cost_line(OpClass::Attention, LinkClass::Local, 1, 5.0, 5e-3);
  other.attention_pass = model::AttentionPass::Forward;
  other.head_dim = 3;
  s.profile->costs.push_back(backward);
  s.profile->costs.push_back(other);
  const cost::CostModel costs(*s.profile);
  CHECK(plan::price_mapping(s, costs, mapping(2, 1, 1, 2, 1)).iteration_ms ==
        Approx(4.836 + 0.892 + toy_ends_ms(8, 2)));
}

TEST_CASE("plan::price_mapping prices chunked attention's pairs, and refuses it where it is not modelled",
          "[plan][folding][chunk]") {
  // Chunks of 3 tokens over 8: positions 1-3, 4-6 and the partial 7-8; a query
  // sees its chunk up to itself: (1 + 2 + 3) + (1 + 2 + 3) + (1 + 2) = 15 pairs.
  CHECK(cost::chunked_pairs(8, 8, 3) == 15);
  CHECK(cost::chunked_pairs(3, 8, 3) == 6);   // queries 6, 7, 8: 3 + 1 + 2
  CHECK(cost::chunked_pairs(2, 8, 3) == 3);   // queries 7, 8: 1 + 2
  CHECK(cost::chunked_pairs(8, 8, 4) == 20);  // two full chunks of 4: 10 + 10
  CHECK(cost::chunked_pairs(8, 8, 100) == cost::causal_pairs(8, 8));
  // Not a sliding window of the same size: query 4 sees 1 key, not 3.
  CHECK(cost::chunked_pairs(8, 8, 3) < cost::windowed_pairs(8, 8, 3));
  model::ScenarioSpec s = toy_scenario();
  s.model.attention_chunk_size = 3;
  s.model.chunk_layer = {true};
  // Core FLOPs at tp 2: 22 x 15 / 2 = 165 (0.165 ms) instead of 396: forward
  // once and backward twice, 3 x (0.396 - 0.165) = 0.693 ms less than 4.836
  // (and the model's ends, toy_ends_ms(8, 2)).
  s.cluster.gpu.peak_flops_per_s_bf16 = 2e6;  // only MFU's denominator, as for the window
  const cost::CostModel costs(*s.profile);
  CHECK(plan::price_mapping(s, costs, mapping(2, 1, 1, 2, 1)).iteration_ms == Approx(4.836 - 0.693 + toy_ends_ms(8, 2)));
  // MFU's model FLOPs: the one block's context per token is 15 / 8 - 1/2 = 1.375
  // tokens instead of 8 / 2 = 4.
  model::ModelSpec full = s.model;
  full.attention_chunk_size = 0;
  full.chunk_layer.clear();
  const double per_context_token =
      2.0 * static_cast<double>(s.model.num_heads * (s.model.head_dim + s.model.value_head_dim()));
  CHECK(model::forward_flops_per_token(full, 8) - model::forward_flops_per_token(s.model, 8) ==
        Approx(per_context_token * (4.0 - 1.375)));
  // Context parallelism's ring is not built for chunks.
  CHECK_THROWS_WITH(plan::price_mapping(s, costs, mapping(1, 2, 1, 2, 1)),
                    Catch::Contains("context parallelism with chunked attention"));
  model::ScenarioSpec foldmoe = s;
  foldmoe.schedule.family = "foldmoe";
  CHECK_THROWS_WITH(model::family_rules("foldmoe").validate(foldmoe), Catch::Contains("chunked attention"));
  // A window and chunks on one block: two masks, refused.
  s.model.sliding_window = 4;
  s.model.window_layer = {true};
  CHECK_THROWS_WITH(model::validate(s.model), Catch::Contains("also in sliding_window_layers"));
}

TEST_CASE("plan::price_mapping with Megatron's data-parallel overlap (toy, by hand)", "[plan][folding][dp-overlap]") {
  // tp 1 cp 2 ep 1 etp 1 (7.434 ms above): the step after the drain is 0.888
  // (dense, dp x cp = 2) + 0.768 (experts, edp = 2) = 1.656 ms. The layers'
  // share (no embedding, LM head or final norm): dense attention 64 + norms 8 +
  // router 8 = 80 parameters, experts 128: gradient ReduceScatter 80 x 4 B +
  // 128 x 4 B = 832 B = 0.832 ms; parameter AllGather 80 x 2 + 128 x 2 = 416 B =
  // 0.416 ms. The one block's micro-batch backward is 2.968 + 0.884 (the
  // exposed ring step) = 3.852 ms, its forward 1.484 + 0.442 = 1.926 ms: both
  // collectives fit behind them.
  //   --overlap-grad-reduce:                      7.434 - 0.832 = 6.602
  //   and --overlap-param-gather:                 6.602 - 0.416 = 6.186
  //   compute slowed 1.5 x beside them: + 0.5 x (0.832 + 0.416) = 6.810
  // each plus the model's ends over the 4 tokens of cp 2 (toy_ends_ms(4, 1)).
  model::ScenarioSpec s = toy_scenario();
  const cost::MappingConfig c = mapping(1, 2, 1, 1, 1);
  const double ends = toy_ends_ms(4, 1);
  CHECK(plan::price_mapping(s, cost::CostModel(*s.profile), c).iteration_ms == Approx(7.434 + ends));
  s.schedule.overlap_grad_reduce = true;
  const plan::MappingResult rs = plan::price_mapping(s, cost::CostModel(*s.profile), c);
  CHECK(rs.iteration_ms == Approx(6.602 + ends));
  CHECK(rs.breakdown.dp_ms == Approx(1.656 - 0.832));
  s.schedule.overlap_param_gather = true;
  CHECK(plan::price_mapping(s, cost::CostModel(*s.profile), c).iteration_ms == Approx(6.186 + ends));
  s.profile->overlap_compute_slowdown = 1.5;
  CHECK(plan::price_mapping(s, cost::CostModel(*s.profile), c).iteration_ms == Approx(6.810 + ends));
}

TEST_CASE("plan::price_mapping with Megatron's 1F1B A2A overlap (toy, by hand)", "[plan][folding][a2a-overlap]") {
  // tp 2 cp 1 ep 2 etp 1 with two micro-batches (global batch 2, dp 1): each
  // micro-batch 4.836 ms as above (forward compute 1.484, backward 2.968, TP
  // 0.128 and EP dispatch + combine 0.064 per pass): 9.672 ms. With one stage
  // the steady state pairs micro-batch 2's forward with 1's backward: 1 pair
  // of 2, so on average half of each pass's AlltoAll hides (behind the other
  // pass's compute, which is longer): 2 micro-batches x (0.032 + 0.032) = 0.128.
  //   9.672 - 0.128 = 9.544; the breakdown's a2a: 2 x 2 x 0.064 - 0.128 = 0.128.
  // Compute slowed 1.5 x beside it: 9.544 + 0.5 x 0.128 = 9.608.
  // Each micro-batch also runs the model's ends (toy_ends_ms(8, 2)).
  model::ScenarioSpec s = toy_scenario();
  s.workload.global_batch_size = 2;
  s.cluster.gpu.peak_flops_per_s_bf16 = 2e6;  // MFU's denominator only
  const cost::MappingConfig c = mapping(2, 1, 1, 2, 1);
  const double ends = toy_ends_ms(8, 2);
  CHECK(plan::price_mapping(s, cost::CostModel(*s.profile), c).iteration_ms == Approx(9.672 + 2 * ends));
  s.schedule.a2a_overlap = true;
  const plan::MappingResult r = plan::price_mapping(s, cost::CostModel(*s.profile), c);
  CHECK(r.iteration_ms == Approx(9.544 + 2 * ends));
  CHECK(r.breakdown.a2a_ms == Approx(0.128));
  s.profile->overlap_compute_slowdown = 1.5;
  CHECK(plan::price_mapping(s, cost::CostModel(*s.profile), c).iteration_ms == Approx(9.608 + 2 * ends));
  // One micro-batch: nothing to pair, nothing hidden.
  s.workload.global_batch_size = 1;
  s.profile->overlap_compute_slowdown = 1.0;
  CHECK(plan::price_mapping(s, cost::CostModel(*s.profile), c).iteration_ms == Approx(4.836 + ends));
}

namespace {

// The two-block toy on one stage (pp 1: both blocks in flight at once, dp 2:
// a batch of two sequences, one micro-batch each), with an element-wise line
// (1e-3 ms per byte) for the norms and activations that recomputation reruns.
model::ScenarioSpec one_stage_toy(const model::RecomputeSpec& recompute) {
  model::ScenarioSpec s = two_block_toy();
  s.workload.global_batch_size = 2;
  for (model::LinearCostSpec& line : s.profile->costs)
    if (line.op == model::OpClass::Elementwise) line.beta_ms_per_unit = 1e-3;
  s.schedule.recompute = recompute;
  return s;
}

model::RecomputeSpec selective(std::vector<std::string> modules) {
  model::RecomputeSpec r;
  r.granularity = "selective";
  r.modules = std::move(modules);
  return r;
}

model::RecomputeSpec full(const std::string& method, std::int64_t layers) {
  model::RecomputeSpec r;
  r.granularity = "full";
  r.method = method;
  r.num_layers = layers;
  return r;
}

}  // namespace

TEST_CASE("plan::price_mapping: what each recomputed module frees (toy, by hand)", "[plan][folding][recompute]") {
  // One unit is s b h / tp at 2-byte elements: 8 tokens x d 4 = 32 B. Without
  // recomputation the stage keeps the dense block's 24.5 units (784 B) and the
  // MoE block's 26.5 (848 B, the case above): 1632 B.
  const auto memory = [](const model::RecomputeSpec& r) {
    const model::ScenarioSpec s = one_stage_toy(r);
    const cost::CostModel costs(*s.profile);
    return plan::price_mapping(s, costs, mapping(1, 1, 1, 1, 1)).memory_bytes_per_gpu;
  };
  const double none = memory({});
  // The expert hidden over 4d: 8 / 16 = 0.5 of Korthikanti's 19-unit MLP.
  // moe_act: the routed experts' activation output, 8 x 0.5 = 4 units.
  CHECK(memory(selective({"moe_act"})) == Approx(none - 4 * 32));
  // moe: the whole expert part, 19 x 0.5 = 9.5 units (the input is the norm's output, kept).
  CHECK(memory(selective({"moe"})) == Approx(none - 9.5 * 32));
  // mlp: the dense MLP's 9.5 units but its 2-unit input.
  CHECK(memory(selective({"mlp"})) == Approx(none - 7.5 * 32));
  // layernorm: the MoE block's pre-MLP norm output (2 units); the toy's
  // attention is not MLA, whose input norm Transformer Engine fuses.
  CHECK(memory(selective({"layernorm"})) == Approx(none - 2 * 32));
  // core_attn (selective's default) frees nothing under flash attention.
  CHECK(memory(selective({})) == Approx(none));
  // full, uniform, one block per group: two inputs of 2 units (128 B) and the
  // block being recomputed, the larger (848 B): 976 B.
  CHECK(memory(full("uniform", 1)) == Approx(none - 1632 + 128 + 848));
  // Groups of two: one input (64 B) and both blocks being recomputed: 1760 B.
  CHECK(memory(full("uniform", 2)) == Approx(none - 1632 + 64 + 2 * 848));
  // block, the first block: its input, the other kept at the stage's mean
  // block ((784 + 848) / 2 = 816), and the one being recomputed: 1728 B.
  CHECK(memory(full("block", 1)) == Approx(none - 1632 + 64 + 816 + 848));
}

TEST_CASE("plan::price_mapping: a clamped GLU's torch clamps keep their inputs, and rerun under moe_act (toy, by hand)",
          "[plan][folding][recompute]") {
  // The one-stage toy with SwiGLU experts: the clamps keep the first GEMM's
  // output halves, 2 f per slot, 16 units x the experts' 0.5 of the 19-unit
  // MLP = 8 units, 256 B, beside everything the unclamped experts keep.
  const auto price = [](const model::RecomputeSpec& r, double clamp) {
    model::ScenarioSpec s = one_stage_toy(r);
    s.model.moe.expert_type = model::FfnType::SwiGlu;
    s.model.moe.glu_clamp = clamp;
    const cost::CostModel costs(*s.profile);
    return plan::price_mapping(s, costs, mapping(1, 1, 1, 1, 1));
  };
  CHECK(price({}, 7.0).memory_bytes_per_gpu == Approx(price({}, 0.0).memory_bytes_per_gpu + 8 * 32));
  // moe_act recomputed: the clamps run inside the checkpoint and keep nothing.
  const model::RecomputeSpec act = selective({"moe_act"});
  CHECK(price(act, 7.0).memory_bytes_per_gpu == Approx(price(act, 0.0).memory_bytes_per_gpu));
  // Time: the clamps' bytes on the element-wise line (1e-3 ms a byte), the
  // slots' 8 tokens x expert hidden 8 = 64 elements x 2 B: forward 8 x 128 =
  // 1,024 B and backward 6 x 128 = 768 B: +1.792 ms; under moe_act the
  // backward pass reruns the forward clamps too: +1.024 ms more.
  const double plain = price({}, 0.0).iteration_ms;
  CHECK(price({}, 7.0).iteration_ms == Approx(plain + 1.792));
  CHECK(price(act, 7.0).iteration_ms == Approx(price(act, 0.0).iteration_ms + 1.792 + 1.024));
}

TEST_CASE("plan::price_mapping: recomputation reruns forward work in the backward pass (toy, by hand)",
          "[plan][folding][recompute]") {
  // The pipeline of the case above (pp 2, one micro-batch): 18.704 ms without
  // recomputation, and the LM head's 1.536 (toy_ends_ms(8, 1)), which none reruns. Each block's attention core: its attention 1.816 ms less
  // the projections' 1,024 FLOPs (1.024 ms) = 0.792 ms. The MoE layer: the MoE
  // block's forward 2.968 less its attention = 1.152 ms (router and experts;
  // one-rank groups move nothing). The dense MLP: 1,024 FLOPs = 1.024 ms.
  model::ScenarioSpec s = two_block_toy();
  const cost::CostModel costs(*s.profile);
  const auto iteration = [&](const model::RecomputeSpec& r) {
    model::ScenarioSpec t = s;
    t.schedule.recompute = r;
    return plan::price_mapping(t, costs, mapping(1, 1, 2, 1, 1)).iteration_ms;
  };
  const double base = 18.704 + toy_ends_ms(8, 1);
  CHECK(iteration({}) == Approx(base));
  CHECK(iteration(selective({})) == Approx(base + 2 * 0.792));  // core_attn in both blocks
  CHECK(iteration(selective({"moe"})) == Approx(base + 1.152));
  CHECK(iteration(selective({"mlp", "moe"})) == Approx(base + 1.152 + 1.024));
  // full: each block's backward reruns its whole forward, 2.968 and 2.84 ms.
  CHECK(iteration(full("uniform", 1)) == Approx(base + 2.968 + 2.84));
  // block, 0 blocks per chunk: nothing recomputed.
  CHECK(iteration(full("block", 0)) == Approx(base));
  model::ScenarioSpec t = s;
  t.schedule.recompute = selective({"moe"});
  CHECK(plan::price_mapping(t, costs, mapping(1, 1, 2, 1, 1)).breakdown.recompute_ms == Approx(1.152));
}

TEST_CASE("plan::price_mapping: element-wise recomputation is priced by bytes (toy, by hand)",
          "[plan][folding][recompute]") {
  // pp 1, the MoE block only (the dense block reruns no norm: its norms are
  // fused, the toy has no MLA). layernorm: the pre-MLP norm reads and writes
  // 8 tokens x d 4 x 2 B = 128 B: 0.128 ms. moe_act: the GELU reads and writes
  // its 8 hidden per routed slot, 8 slots (8 tokens, top-1): 8 x 2 x 8 x 2 B = 256 B: 0.256 ms.
  const auto recompute_ms = [](const model::RecomputeSpec& r) {
    const model::ScenarioSpec s = one_stage_toy(r);
    const cost::CostModel costs(*s.profile);
    return cost::price_layers(s, costs, mapping(1, 1, 1, 1, 1));
  };
  CHECK(recompute_ms(selective({"layernorm"})).recompute_ms == Approx(0.128));
  CHECK(recompute_ms(selective({"layernorm"})).dense_recompute_ms == Approx(0));
  CHECK(recompute_ms(selective({"moe_act"})).recompute_ms == Approx(0.256));
}

namespace {

// The search's result for one mapping of the toy (tp, cp, pp, ep, etp all 1, one sequence per micro-batch).
const plan::PricedMapping& one_stage_mapping(const std::vector<plan::PricedMapping>& all) {
  const auto it = std::find_if(all.begin(), all.end(), [](const plan::PricedMapping& p) {
    const cost::MappingConfig& c = p.result.config;
    return c.tp == 1 && c.cp == 1 && c.pp == 1 && c.ep == 1 && c.etp == 1 && c.micro_batch == 1;
  });
  REQUIRE(it != all.end());
  return *it;
}

}  // namespace

TEST_CASE("plan::price_mappings: an open recomputation is the lightest that fits (toy, by hand)",
          "[plan][folding][recompute][search]") {
  // The one-stage toy keeps 1632 B of activations without recomputation
  // (above), 1632 - 128 (moe_act) - 64 (layernorm) = 1440 B with selective's
  // output-discarding modules, 976 B under full. W, the rest, is what the
  // mapping holds without activations.
  model::ScenarioSpec s = one_stage_toy({});
  const cost::CostModel costs(*s.profile);
  const double w = plan::price_mapping(s, costs, mapping(1, 1, 1, 1, 1)).memory_bytes_per_gpu - 1632;
  s.schedule.search = {"recompute"};
  const auto chosen_at = [&](double usable_bytes) {
    model::ScenarioSpec t = s;
    // The GPU whose usable memory is usable_bytes: the CUDA context
    // (287,047,680 B) plus usable_bytes and the allocator's 4% over it.
    t.cluster.gpu.memory_bytes = usable_bytes * 1.04 + 287047680.0;
    return one_stage_mapping(plan::price_mappings(t, costs, "folded", 1)).result;
  };
  const plan::MappingResult roomy = chosen_at(w + 2000);
  REQUIRE(roomy.chosen_recompute);
  CHECK(model::recompute_text(*roomy.chosen_recompute) == "none");
  CHECK_FALSE(roomy.recompute_for_memory);
  const plan::MappingResult tight = chosen_at(w + 1500);
  REQUIRE(tight.chosen_recompute);
  CHECK(model::recompute_text(*tight.chosen_recompute) == "selective:moe_act+layernorm");
  CHECK(tight.recompute_for_memory);
  CHECK_THAT(tight.knob_choice, Catch::StartsWith("recompute none needs"));
  CHECK(tight.memory_bytes_per_gpu == Approx(w + 1440));
  const plan::MappingResult tighter = chosen_at(w + 1000);
  REQUIRE(tighter.chosen_recompute);
  CHECK(model::recompute_text(*tighter.chosen_recompute) == "full");
  CHECK(tighter.fits);
  CHECK_THAT(tighter.knob_choice, Catch::StartsWith("recompute selective:moe_act+layernorm needs"));
  // Nothing fits at w + 900: the last rung is kept, not fitting.
  CHECK_FALSE(chosen_at(w + 900).fits);
}

TEST_CASE("plan::price_mappings: an open precision is the fastest one, as priced alone", "[plan][folding][search]") {
  // The toy with FP8 tensor cores at twice its BF16 peak and lines for FP8
  // GEMMs (half the BF16 slope) and casts. The search's choice for a mapping
  // must be the fastest of the precisions priced one by one (a second
  // formulation of "the fastest that fits"); mxfp8 needs MX tensor cores the
  // toy's GPU lacks, so it is left out with the reason.
  model::ScenarioSpec s = one_stage_toy({});
  s.cluster.gpu.peak_flops_per_s_fp8 = 2e6;
  s.profile->costs.push_back(testing::cost_line(model::OpClass::GemmFp8, model::LinkClass::Local, 1, 0.0, 5e-4));
  const cost::CostModel costs(*s.profile);
  s.schedule.search = {"precision"};
  const plan::OpenKnobs open = plan::open_knobs(s);
  REQUIRE(open.by_precision.size() == 3);  // bf16, fp8_tensorwise, fp8_blockwise
  REQUIRE(open.notes.size() == 1);
  CHECK_THAT(open.notes.front(), Catch::StartsWith("precision mxfp8 not searched"));
  const std::vector<plan::PricedMapping> searched = plan::price_mappings(s, costs, "folded", 1);
  const plan::MappingResult& chosen = one_stage_mapping(searched).result;
  REQUIRE(chosen.chosen_precision);
  double fastest = 0;
  model::Precision best = model::Precision::Bf16;
  for (const model::Precision p :
       {model::Precision::Bf16, model::Precision::Fp8Tensorwise, model::Precision::Fp8Blockwise}) {
    model::ScenarioSpec t = s;
    t.schedule.search.clear();
    t.workload.precision = p;
    const double ms = plan::price_mapping(t, costs, mapping(1, 1, 1, 1, 1)).iteration_ms;
    if (fastest == 0 || ms < fastest) {
      fastest = ms;
      best = p;
    }
  }
  CHECK(*chosen.chosen_precision == best);
  CHECK(chosen.iteration_ms == Approx(fastest));
  CHECK(best != model::Precision::Bf16);  // FP8 GEMMs at half the time outrun the casts here
  CHECK_THAT(chosen.knob_choice, Catch::Contains("bf16") && Catch::Contains("fp8_blockwise"));
  // Nothing searched: the scenario's own precision, no choice recorded.
  s.schedule.search.clear();
  CHECK_FALSE(one_stage_mapping(plan::price_mappings(s, costs, "folded", 1)).result.chosen_precision);
}

namespace {

// The toy with Megatron-FSDP (schedule.data_parallel_sharding_strategy).
model::ScenarioSpec fully_sharded(model::ScenarioSpec s) {
  s.schedule.data_parallel_sharding_strategy = "optim_grads_params";
  return s;
}

// The toy's AllGather and ReduceScatter lines 10 x slower (1e-2 ms per byte):
// FSDP's per-block collectives then outlast the block's compute.
model::ScenarioSpec slow_data_parallel_links(model::ScenarioSpec s) {
  for (model::LinearCostSpec& line : s.profile->costs)
    if (line.op == OpClass::AllGather || line.op == OpClass::ReduceScatter) line.beta_ms_per_unit = 1e-2;
  return s;
}

// The toy on two nodes of 8 GPUs (16 ranks), E = 16 GELU experts (one a rank
// at ep 16), top-2, one sequence of s = 8 tokens per data-parallel rank
// (global batch 16). Lines without startup: the inter-node AlltoAll of 16
// ranks at 8 a node 1e-3 ms per buffer byte, the intra-node AlltoAll of 8
// 1e-4 (NVLink ten times the network), and the data-parallel AllGather and
// ReduceScatter of the optimizer over 16 ranks (and over 8 on a node).
model::ScenarioSpec deepep_toy() {
  model::ScenarioSpec s = toy_scenario();
  s.model.moe.num_experts = 16;
  s.model.moe.top_k = 2;
  s.cluster.num_nodes = 2;
  s.cluster.gpus_per_node = 8;
  s.workload.global_batch_size = 16;
  s.profile->costs = {testing::cost_line(OpClass::Gemm, LinkClass::Local, 1, 0.0, 1e-3),
                      testing::cost_line(OpClass::Attention, LinkClass::Local, 1, 0.0, 1e-3),
                      testing::cost_line(OpClass::AllGather, LinkClass::Inter, 16, 0.0, 1e-3, 8),
                      testing::cost_line(OpClass::ReduceScatter, LinkClass::Inter, 16, 0.0, 1e-3, 8),
                      testing::cost_line(OpClass::A2A, LinkClass::Inter, 16, 0.0, 1e-3, 8),
                      testing::cost_line(OpClass::A2A, LinkClass::Intra, 8, 0.0, 1e-4),
                      // tensor parallelism's, for the mappings the AlltoAll prices and DeepEP refuses
                      testing::cost_line(OpClass::AllGather, LinkClass::Intra, 8, 0.0, 1e-4),
                      testing::cost_line(OpClass::ReduceScatter, LinkClass::Intra, 8, 0.0, 1e-4),
                      testing::cost_line(OpClass::AllReduce, LinkClass::Intra, 8, 0.0, 2e-4),
                      // memory-bound kernels at 100 TB/s: nothing at the toy's bytes (folding_toy.hpp)
                      testing::cost_line(OpClass::Elementwise, LinkClass::Local, 1, 0.0, 1e-14)};
  return s;
}

}  // namespace

TEST_CASE("plan::price_mapping with Megatron-FSDP: memory (toy, by hand)", "[plan][folding][fsdp]") {
  // tp 1 cp 2 ep 1 etp 1 on the toy: dp x cp = 2, edp = 2. One MoE block
  // holds dense attention 64 + norms 8 + router 8 = 80 parameters and experts
  // 2 x 2 d F = 128; the ends embedding V d = 32 + LM head 32 + final norm 4 = 68.
  // Activations (flash, no recomputation): 4 local tokens x d = 16 B per
  // Korthikanti unit, 15 attention + 2 pre-MLP norm + 19 x (top-1 x F / 4d =
  // 0.5) = 26.5 units = 424 B per block, one micro-batch in flight.
  // Distributed optimizer: (148 + 128) x (2 + 4) + 148 x 12 / 2 + 128 x 12 / 2
  //   = 1656 + 888 + 768 = 3312, + 424 = 3736 B.
  // Megatron-FSDP: the ends as above, 68 x 6 + 68 x 12 / 2 = 816; the block's
  //   weights, gradients and optimizer state over their groups of 2: (80 + 128)
  //   x 18 / 2 = 1872; the working set, two blocks' weights gathered (2 x 2 B)
  //   and one block's fp32 gradient (4 B): 208 x 8 = 1664. 816 + 1872 + 1664 +
  //   424 = 4776 B: one block is all the working set, more than it saves.
  // Both also hold one micro-batch's logits and their fp32 copy: (2 + 4) x 4
  // tokens x 8 = 192 B. The distributed optimizer's run fuses the weight
  // gradients' accumulation, so it also holds Transformer Engine's cached dummy
  // weight gradients (one bf16 tensor per distinct linear shape: QKV 12 x 4,
  // O 4 x 4, an expert's 8 x 4 and 4 x 8 = 128 elements): 256 B; Megatron-FSDP
  // runs without the fusion (its user guide), so without them.
  model::ScenarioSpec s = toy_scenario();
  const cost::CostModel costs(*s.profile);
  const cost::MappingConfig c = mapping(1, 2, 1, 1, 1);
  CHECK(plan::price_mapping(s, costs, c).memory_bytes_per_gpu == Approx(3736 + 192 + 256));
  CHECK(plan::price_mapping(fully_sharded(s), costs, c).memory_bytes_per_gpu == Approx(4776 + 192));
  // Without master weights (schedule.master_weights none): the optimizer
  // state is the two fp32 moments (8 B) and the kept gradient the weights'
  // 2 B. Ends 68 x (2 + 2) + 68 x 8 / 2 = 544; the block 208 x (2 + 2 + 8) / 2
  // = 1248; the working set as before (its gradient reduced in fp32): 1664.
  // 544 + 1248 + 1664 + 424 + 192 = 4072 B. bf16 moments (4 B): ends 272 +
  // 68 x 4 / 2 = 408, block 208 x 8 / 2 = 832: 3520 B.
  model::ScenarioSpec no_master = fully_sharded(s);
  no_master.schedule.master_weights = "none";
  CHECK(plan::price_mapping(no_master, costs, c).memory_bytes_per_gpu == Approx(4072));
  no_master.schedule.optimizer_moments_dtype = "bf16";
  CHECK(plan::price_mapping(no_master, costs, c).memory_bytes_per_gpu == Approx(3520));
  // Four MoE blocks (pp 1): distributed optimizer (4 x 80 + 68 = 388 dense,
  // 4 x 128 = 512 experts): 900 x 6 + 388 x 6 + 512 x 6 = 10800, + 4 x 424
  // activations = 12496 B. Megatron-FSDP: 816 + (320 + 512) x 9 + 1664 = 9968,
  // + 1696 = 11664 B: 832 B less.
  s.model.num_layers = 4;
  s.model.moe_layer = {true, true, true, true};
  CHECK(plan::price_mapping(s, costs, c).memory_bytes_per_gpu == Approx(12496 + 192 + 256));
  CHECK(plan::price_mapping(fully_sharded(s), costs, c).memory_bytes_per_gpu == Approx(11664 + 192));
  // tp 2 ep 2 (dp x cp = edp = 1): nothing is sharded or gathered, the same
  // bytes as without but the dummy weight gradients (QKV 6 x 4, O 4 x 2, an
  // expert's 8 x 4 and 4 x 8 at etp 1: 96 elements, 192 B).
  s = toy_scenario();
  const cost::MappingConfig alone = mapping(2, 1, 1, 2, 1);
  CHECK(plan::price_mapping(fully_sharded(s), costs, alone).memory_bytes_per_gpu ==
        Approx(plan::price_mapping(s, costs, alone).memory_bytes_per_gpu - 192));
}

TEST_CASE("plan::price_mapping with Megatron-FSDP: per-block collectives hidden or exposed (toy, by hand)",
          "[plan][folding][fsdp]") {
  // tp 1 cp 2 ep 1 etp 1 (7.434 ms above: compute 4.452, the exposed ring step
  // 0.442 forward + 0.884 backward = 1.326, the step 0.888 + 0.768 = 1.656). Per micro-batch the MoE block
  // gathers 80 x 2 B (dense, dp x cp) + 128 x 2 B (experts, edp) = 416 B =
  // 0.416 ms before its forward and again before its backward, and
  // reduce-scatters 80 x 4 + 128 x 4 = 832 B = 0.832 ms after its backward.
  // Its compute, forward 1.484 ms and backward 2.968 ms, hides 0.416 and
  // 0.416 + 0.832 = 1.248. The step keeps the ends' 68 parameters: 68 x 6 B = 0.408 ms.
  //   4.452 + 1.326 + 0.408 = 6.186 ms; dp_ms 0.408.
  // Compute slowed 1.5 x beside them: + 0.5 x (0.416 + 1.248) = 7.018.
  // Every iteration below also runs the model's ends (toy_ends_ms(4, 1)).
  const double ends = toy_ends_ms(4, 1);
  model::ScenarioSpec s = fully_sharded(toy_scenario());
  const cost::MappingConfig c = mapping(1, 2, 1, 1, 1);
  const plan::MappingResult hidden = plan::price_mapping(s, cost::CostModel(*s.profile), c);
  CHECK(hidden.iteration_ms == Approx(6.186 + ends));
  CHECK(hidden.breakdown.dp_ms == Approx(0.408));
  s.profile->overlap_compute_slowdown = 1.5;
  CHECK(plan::price_mapping(s, cost::CostModel(*s.profile), c).iteration_ms == Approx(7.018 + ends));
  // AllGather and ReduceScatter 10 x slower: gathers 4.16 ms, reduce-scatter
  // 8.32 ms. Forward exposes 4.16 - 1.484 = 2.676, backward 4.16 + 8.32 -
  // 2.968 = 9.512; the ends' step 4.08.
  //   4.452 + 1.326 + 2.676 + 9.512 + 4.08 = 22.046 ms; dp_ms 4.08 + 12.188 = 16.268.
  // The distributed optimizer at these links: 4.452 + 1.326 + 16.56 = 22.338 ms.
  const model::ScenarioSpec slow = slow_data_parallel_links(toy_scenario());
  const cost::CostModel slow_costs(*slow.profile);
  const plan::MappingResult exposed = plan::price_mapping(fully_sharded(slow), slow_costs, c);
  CHECK(exposed.iteration_ms == Approx(22.046 + ends));
  CHECK(exposed.breakdown.dp_ms == Approx(16.268));
  CHECK(plan::price_mapping(slow, slow_costs, c).iteration_ms == Approx(22.338 + ends));
}

TEST_CASE("plan::price_mapping with Megatron-FSDP: a dense block's collectives (toy, by hand)",
          "[plan][folding][fsdp]") {
  // The two-block toy (dense, then MoE) on tp 1 cp 2 pp 1 ep 1 etp 1. Compute
  // per micro-batch: dense block forward 512 + 396 + FFN 512 = 1420 FLOPs =
  // 1.420 ms, backward 2.840; MoE block 1.484 and 2.968: 8.712 ms. The ring
  // step exposes 0.442 forward and 0.884 backward per block: 2.652. The dense block gathers
  // attention 64 + norms 8 + FFN 2 d F = 64: 136 x 2 B = 0.272 ms per pass and
  // reduce-scatters 136 x 4 B = 0.544 ms, all hidden (0.272 < 1.420, 0.816 <
  // 2.840); the MoE block's are hidden as in the one-block toy. The ends' step
  // 0.408: 8.712 + 2.652 + 0.408 = 11.772 ms. Without FSDP the step is
  // (136 + 80 + 68) x 6 B + 128 x 6 B = 2.472 ms: 13.836 ms. Each plus the
  // model's ends over 4 tokens (toy_ends_ms(4, 1)).
  const double ends = toy_ends_ms(4, 1);
  model::ScenarioSpec s = two_block_toy();
  const cost::MappingConfig c = mapping(1, 2, 1, 1, 1);
  const cost::CostModel costs(*s.profile);
  CHECK(plan::price_mapping(s, costs, c).iteration_ms == Approx(13.836 + ends));
  CHECK(plan::price_mapping(fully_sharded(s), costs, c).iteration_ms == Approx(11.772 + ends));
  // 10 x slower links: the dense block exposes 2.72 - 1.42 = 1.30 forward and
  // 2.72 + 5.44 - 2.84 = 5.32 backward, the MoE block 2.676 + 9.512 = 12.188,
  // the ends' step 4.08: 8.712 + 2.652 + 6.62 + 12.188 + 4.08 = 34.252 ms;
  // dp_ms 4.08 + 6.62 + 12.188 = 22.888.
  const model::ScenarioSpec slow = slow_data_parallel_links(two_block_toy());
  const plan::MappingResult r = plan::price_mapping(fully_sharded(slow), cost::CostModel(*slow.profile), c);
  CHECK(r.iteration_ms == Approx(34.252 + ends));
  CHECK(r.breakdown.dp_ms == Approx(22.888));
}

TEST_CASE("Megatron-FSDP is refused where it cannot act or is not modelled, naming the field",
          "[plan][folding][fsdp]") {
  const auto refused = [](const std::string& scenario, const std::vector<io::Override>& overrides,
                          const std::string& field) {
    INFO(scenario << " " << field);
    try {
      io::load_scenario(scenario, overrides);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Input);
      CHECK(e.field() == field);
    }
  };
  const io::Override fsdp{"schedule.data_parallel_sharding_strategy", "optim_grads_params"};
  // Megatron's strategies moeplan does not price.
  for (const char* other : {"no_shard", "optim_grads", "zero3"})
    refused("folding-qwen2-57b-a14b-64", {{"schedule.data_parallel_sharding_strategy", other}},
            "schedule.data_parallel_sharding_strategy");
  // No data parallelism (16 GPUs: tp 4 x pp 4, ep 4 x pp 4): nothing to shard over.
  refused("folding-qwen2-57b-a14b-64", {{"cluster.num_nodes", "2"}, {"parallelism.ep", "4"}, fsdp},
          "schedule.data_parallel_sharding_strategy");
  // The layer schedules' families.
  refused("flowmoe-gpt2-tiny-moe-c1", {fsdp}, "schedule.data_parallel_sharding_strategy");
  refused("foldmoe-gpt-moe-m-16k", {fsdp}, "schedule.data_parallel_sharding_strategy");
  // The step's overlap flags have nothing left to hide; the A2A overlap would share FSDP's compute.
  refused("folding-qwen2-57b-a14b-64", {fsdp, {"schedule.overlap_grad_reduce", "true"}},
          "schedule.overlap_grad_reduce");
  refused("folding-qwen2-57b-a14b-64", {fsdp, {"schedule.overlap_param_gather", "true"}},
          "schedule.overlap_param_gather");
  refused("folding-qwen2-57b-a14b-64", {fsdp, {"schedule.a2a_overlap", "true"}}, "schedule.a2a_overlap");
  CHECK(model::fully_sharded(io::load_scenario("folding-qwen2-57b-a14b-64", {fsdp}).schedule));
}

TEST_CASE("price_layers with the DeepEP dispatcher on two nodes (toy, by hand)", "[plan][folding][deepep]") {
  // tp 1 cp 1 ep 16 etp 1: each rank dispatches its T = 8 tokens of d 4 x 2 B = 8 B.
  model::ScenarioSpec s = deepep_toy();
  const cost::CostModel costs(*s.profile);
  const cost::MappingConfig c = mapping(1, 1, 1, 16, 1);
  // AlltoAll: 8 tokens x k 2 x 8 B = 128 B a rank; the network part 128 x 1e-3 =
  // 0.128 ms, the on-node part (7/16 of the buffer at 1e-4 x 8/7 a byte)
  // 0.0064: dispatch 0.128, with the combine 0.256 ms.
  CHECK(cost::price_layers(s, costs, c).a2a_ms == Approx(0.256));
  // DeepEP: a token reaches 2 x (1 - C(8,2)/C(16,2)) = 23/15 of the 2 nodes and
  // k = 2 GPUs (one expert each): network buffer 8 x 23/15 x 8 B = 98.13 B,
  // 0.098133 ms; NVLink buffer 8 x 2 nodes x 2 x 8 B = 256 B at 0.5e-4 ms a
  // byte, 0.0128 ms. Dispatch 0.098133, with the combine 0.196267 ms.
  s.schedule.moe_dispatcher = "deepep";
  CHECK(cost::price_layers(s, costs, c).a2a_ms == Approx(2 * 1.472 / 15.0));
  // Node-limited routing: 2 groups of 8 experts (a node each), 1 chosen:
  // every token reaches 1 node (64 B, 0.064 ms) and still 2 GPUs: 0.128 ms.
  s.model.moe.num_expert_groups = 2;
  s.model.moe.topk_groups = 1;
  CHECK(cost::price_layers(s, costs, c).a2a_ms == Approx(0.128));
}

TEST_CASE("price_layers refuses DeepEP where its kernels do not run as priced", "[plan][folding][deepep]") {
  model::ScenarioSpec s = deepep_toy();
  s.schedule.moe_dispatcher = "deepep";
  const auto refused = [&](const model::ScenarioSpec& scenario, const cost::MappingConfig& c) {
    const cost::CostModel costs(*scenario.profile);
    return testing::error_of([&] { cost::price_layers(scenario, costs, c); }).first;
  };
  // dp before ep in the rank order: the EP group of 8 strides over edp 2 (ranks
  // 0, 2, ..., 14), 4 on each node; DeepEP takes 8 consecutive ranks as a node's.
  model::ScenarioSpec strided = s;
  strided.parallel.order = "tp-cp-dp-ep-pp";
  CHECK(refused(strided, mapping(1, 1, 1, 8, 1)) == "schedule.moe_dispatcher");
  // ep 1: nothing to dispatch (Megatron's flex dispatcher asserts ep x etp > 1).
  CHECK(refused(s, mapping(1, 1, 1, 1, 1)) == "schedule.moe_dispatcher");
  // Expert tensor parallelism.
  CHECK(refused(s, mapping(1, 1, 1, 8, 2)) == "schedule.moe_dispatcher");
  // Padding to a capacity factor.
  model::ScenarioSpec padded = s;
  padded.model.moe.capacity_factor = 1.5;
  CHECK(refused(padded, mapping(1, 1, 1, 16, 1)) == "schedule.moe_dispatcher");
  // A multi-node NVLink domain (HybridEP's case).
  model::ScenarioSpec nvl = s;
  nvl.cluster.nvlink_domain_gpus = 16;
  nvl.profile->costs.push_back(testing::cost_line(OpClass::AllGather, LinkClass::Intra, 16, 0.0, 1e-4));
  nvl.profile->costs.push_back(testing::cost_line(OpClass::ReduceScatter, LinkClass::Intra, 16, 0.0, 1e-4));
  CHECK(refused(nvl, mapping(1, 1, 1, 16, 1)) == "schedule.moe_dispatcher");
  // Sixteen ranks of the group on one 16-GPU node: more than DeepEP's 8 NVLink peers.
  model::ScenarioSpec big_node = nvl;
  big_node.cluster.nvlink_domain_gpus = 0;
  big_node.cluster.num_nodes = 1;
  big_node.cluster.gpus_per_node = 16;
  CHECK(refused(big_node, mapping(1, 1, 1, 16, 1)) == "schedule.moe_dispatcher");
  // The AlltoAll prices the strided group; DeepEP prices the default order's
  // EP group of 8 (ranks 0..7, one node) at tp 2 too.
  strided.schedule.moe_dispatcher = "alltoall";
  CHECK(refused(strided, mapping(1, 1, 1, 8, 1)).empty());
  CHECK(refused(s, mapping(2, 1, 1, 8, 1)).empty());
}

TEST_CASE("price_layers with the HybridEP dispatcher: DeepEP's rule, an NVLink domain for the node (toy, by hand)",
          "[plan][folding][deepep][hybridep]") {
  model::ScenarioSpec s = deepep_toy();
  const cost::MappingConfig ep16 = mapping(1, 1, 1, 16, 1);
  // Two 8-GPU nodes, each its own NVLink domain: what DeepEP moves (the test
  // above: 2 x 1.472 / 15 ms).
  s.schedule.moe_dispatcher = "hybridep";
  CHECK(cost::price_layers(s, cost::CostModel(*s.profile), ep16).a2a_ms == Approx(2 * 1.472 / 15.0));
  // One NVLink domain of 16 GPUs over both nodes (a GB200 rack's case), with an
  // AlltoAll line for 8 ranks in it at 1e-4 ms a byte (the toy's intra line).
  // ep 8 (ranks 0..7, dp 16: one sequence of T = 8 tokens a rank): E = 16 on 8
  // ranks of 2, k = 2, so a token reaches 8 x (1 - C(14,2)/C(16,2)) = 8 x
  // 29/120 = 29/15 ranks; one domain, so every copy is a GPU's over NVLink:
  // 8 x 29/15 x 8 B = 123.73 B, 0.012373 ms; with the combine 0.024747 ms. The
  // AlltoAll moves k = 2 copies, 128 B: 0.0256 ms. DeepEP refuses the domain.
  model::ScenarioSpec nvl = s;
  nvl.cluster.nvlink_domain_gpus = 16;
  nvl.profile->costs.push_back(testing::cost_line(OpClass::AllGather, LinkClass::Intra, 16, 0.0, 1e-4));
  nvl.profile->costs.push_back(testing::cost_line(OpClass::ReduceScatter, LinkClass::Intra, 16, 0.0, 1e-4));
  const cost::MappingConfig ep8 = mapping(1, 1, 1, 8, 1);
  CHECK(cost::price_layers(nvl, cost::CostModel(*nvl.profile), ep8).a2a_ms == Approx(2 * 8 * 29.0 / 15.0 * 8 * 1e-4));
  nvl.schedule.moe_dispatcher = "alltoall";
  CHECK(cost::price_layers(nvl, cost::CostModel(*nvl.profile), ep8).a2a_ms == Approx(0.0256));
  nvl.schedule.moe_dispatcher = "deepep";
  const auto field = [](const model::ScenarioSpec& scenario, const cost::MappingConfig& c) {
    return testing::error_of([&] { cost::price_layers(scenario, cost::CostModel(*scenario.profile), c); });
  };
  CHECK(field(nvl, ep8).first == "schedule.moe_dispatcher");
  // What neither backend is priced for is refused under hybridep too, named so.
  nvl.schedule.moe_dispatcher = "hybridep";
  const auto etp2 = field(nvl, mapping(1, 1, 1, 8, 2));
  CHECK(etp2.first == "schedule.moe_dispatcher");
  CHECK(etp2.second.find("hybridep: expert tensor parallelism") != std::string::npos);
  CHECK(field(nvl, mapping(1, 1, 1, 1, 1)).first == "schedule.moe_dispatcher");
}

TEST_CASE("plan::price_mapping prices multi-token prediction on the last stage (toy, by hand)",
          "[plan][folding][mtp]") {
  // The toy at tp 2 cp 1 ep 2 etp 1: 4.836 ms and its ends 1.216 (toy_ends_ms(8, 2)).
  // One MTP module on the (only) stage, per micro-batch:
  //   forward: the MoE block 1.484 + TP 0.128 + EP 0.064 = 1.676; the projection
  //   8 tokens x 2 d x d / tp = 2 x 8 x 8 x 4 / 2 = 256 FLOPs, 0.256 ms; the next
  //   tokens' embedding (its ReduceScatter 0.064) and the head and loss (0.512,
  //   folding_toy.hpp); norms at 1e-14 ms a byte: 2.508 ms.
  //   backward: 3.160 + 2 x 0.256 + 0.064 + 0.576 = 4.312 ms.
  // 6.052 + 2.508 + 4.312 = 12.872 ms.
  model::ScenarioSpec s = toy_scenario();
  s.model.mtp_num_layers = 1;
  const cost::CostModel costs(*s.profile);
  const plan::MappingResult r = plan::price_mapping(s, costs, mapping(2, 1, 1, 2, 1));
  CHECK(r.iteration_ms == Approx(4.836 + toy_ends_ms(8, 2) + 2.508 + 4.312));
  CHECK(r.breakdown.model_ends_ms == Approx(toy_ends_ms(8, 2) + 2.508 + 4.312));
  // Held at tp 2, ep 2: the toy's 84 dense and 64 expert parameters, and the
  // module's three norms 12, projection 2 d d / tp = 16, attention 64 / 2 = 32,
  // the block's norms 8 and router 8 (76 dense), and its local expert 64.
  const cost::HeldParams held = cost::held_params(s.model, r.config);
  CHECK(held.dense == Approx(84 + 76));
  CHECK(held.expert == Approx(64 + 64));
  // The layer schedules time the blocks alone: refused by name.
  model::ScenarioSpec foldmoe = s;
  foldmoe.schedule.family = "foldmoe";
  foldmoe.parallel.dp = 2;
  foldmoe.parallel.edp = 2;
  foldmoe.workload.global_batch_size = 2;
  foldmoe.options.push_back("model.mtp_num_layers");  // as the loader records a field the files give
  CHECK(testing::error_of([&] { model::validate(foldmoe); }).first == "model.mtp_num_layers");
  CHECK_THROWS_WITH(model::validate(foldmoe), Catch::Contains("cannot act"));
}

TEST_CASE("cost::price_layers: a dropless MoE block's forward lasts at least the host's time to issue it",
          "[plan][folding][host]") {
  // The toy made dropless (its capacity factor removed), ep 2 (one expert a
  // rank), dp 2, one micro-batch per rank. f0: the block's forward priced
  // without a host-issue model (the toy's GPU time, about 1 ms). With parts
  // attention 1000, router 100, moe 10 and 1 per local expert (ms, far above
  // f0), the host takes 1000 + 100 + 10 + 1 = 1111 ms to issue the block from
  // its dispatcher's wait, so the forward lasts 1111: the GPU waits 1111 - f0.
  model::ScenarioSpec s = toy_scenario();
  s.model.moe.capacity_factor.reset();
  s.workload.global_batch_size = 2;
  const cost::MappingConfig c = mapping(1, 1, 1, 2, 1);
  const cost::LayerPrices base = cost::price_layers(s, cost::CostModel(*s.profile), c);
  const double f0 = base.layer_forward_ms;
  REQUIRE(f0 > 0);
  REQUIRE(f0 < 10);
  REQUIRE(base.host_wait_ms == 0);
  s.profile->host_issue = model::HostIssueModelSpec{1000, 100, 10, 1, "test"};
  const auto priced = [&](const model::ScenarioSpec& sc) {
    return cost::price_layers(sc, cost::CostModel(*sc.profile), c);
  };
  cost::LayerPrices l = priced(s);
  CHECK(l.layer_forward_ms == Approx(1111));
  CHECK(l.host_wait_ms == Approx(1111 - f0));
  // The backward is issued while the GPU works (no wait there).
  CHECK(l.layer_backward_ms == Approx(base.layer_backward_ms));
  // Whole-iteration graphs: the host issues nothing per block.
  model::ScenarioSpec g = s;
  g.schedule.cuda_graphs = model::parse_cuda_graphs("full_iteration");
  CHECK(priced(g).layer_forward_ms == Approx(f0));
  // Attention graphed: 111 ms; router and preprocessing too: 11 ms.
  g.schedule.cuda_graphs = model::parse_cuda_graphs("attn");
  CHECK(priced(g).layer_forward_ms == Approx(111));
  g.schedule.cuda_graphs = model::parse_cuda_graphs("attn+moe_router+moe_preprocess");
  CHECK(priced(g).layer_forward_ms == Approx(11));
  // Two local experts at ep 1 (dp 2 again from the world of 2: tp 1, cp 1): 1112.
  CHECK(cost::price_layers(s, cost::CostModel(*s.profile), mapping(1, 1, 1, 1, 1)).layer_forward_ms ==
        Approx(1112));
  // Padded token drop does not wait on the host: the toy as it was.
  model::ScenarioSpec drop = s;
  drop.model.moe.capacity_factor = 1.0;
  const cost::LayerPrices drop_base = [&] {
    model::ScenarioSpec d = drop;
    d.profile->host_issue.reset();
    return priced(d);
  }();
  CHECK(priced(drop).layer_forward_ms == Approx(drop_base.layer_forward_ms));
  CHECK(priced(drop).host_wait_ms == 0);
  // A host quicker than the GPU leaves the block as it was.
  model::ScenarioSpec quick = s;
  quick.profile->host_issue = model::HostIssueModelSpec{0.001, 0.001, 0.001, 0.001, "test"};
  CHECK(priced(quick).layer_forward_ms == Approx(f0));
  // Full recomputation reruns the block's forward, wait included.
  model::ScenarioSpec full = s;
  full.schedule.recompute = model::parse_recompute("full", "schedule.recompute");
  model::ScenarioSpec full_base = full;
  full_base.profile->host_issue.reset();
  CHECK(priced(full).recompute_ms == Approx(priced(full_base).recompute_ms + (1111 - f0)));
  // Recomputing the MoE layer alone reruns its dispatch: at least the host's
  // 100 + 10 + 1 = 111 ms for it (the toy's layer takes far less on the GPU).
  model::ScenarioSpec moe_only = s;
  moe_only.schedule.recompute = model::parse_recompute("selective:moe", "schedule.recompute");
  CHECK(priced(moe_only).recompute_ms == Approx(111));
  // The breakdown's term: the wait of every MoE block and micro-batch of the stage (1 x 1).
  const plan::MappingResult r = plan::price_mapping(s, cost::CostModel(*s.profile), c);
  CHECK(r.breakdown.host_wait_ms == Approx(1111 - f0));
}
