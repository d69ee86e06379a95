#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/io/loader.hpp>

using namespace moeplan;

TEST_CASE("cost::workload sizing of GPT-MoE-M on FoldMoE's testbed", "[cost]") {
  // foldmoe-gpt-moe-m-16k: d_model 768, 8 heads, 16 experts top-1, capacity 1.0,
  // expert hidden 1536 (GELU, two GEMMs), 2-byte elements; TP8 + SP, EP16; one 16384-token sequence.
  const model::ScenarioSpec s = io::load_scenario("foldmoe-gpt-moe-m-16k");
  const cost::MoeLayerSizes moe = cost::moe_layer_sizes(s.model, s.parallel, s.workload);
  SECTION("tokens and A2A bytes") {
    CHECK(moe.tokens_per_rank == 2048.0);                     // 16384 / tp 8 (sequence parallel)
    CHECK(moe.dispatch_bytes == 2048.0 * 1 * 1.0 * 768 * 2);  // tokens x top-k x cf x d_model x dtype = 3145728
    CHECK(moe.combine_bytes == moe.dispatch_bytes);
    CHECK(moe.etp_allgather_bytes == 0.0);  // etp = 1
  }
  SECTION("expert and gating FLOPs") {
    CHECK(moe.expert_forward_flops == 2048.0 * 2 * 2 * 768 * 1536);  // 9663676416: 2 GEMMs x 2 FLOPs x d x H
    CHECK(moe.expert_backward_flops == 2 * moe.expert_forward_flops);
    CHECK(moe.gating_forward_flops == 2.0 * 2048 * 768 * 16);
  }
  SECTION("attention FLOPs: causal pairs and projections") {
    // The last 4096 queries of a 16384-token context: 4096 x 12288 earlier keys
    // plus their own triangle 4096 x 4097 / 2 = 58722304 pairs, at (4 x 768 + 3 x 8)
    // FLOPs each (Eq. 5's 4H + 3h), plus Q, K, V, O projections 8 x 768^2 x 4096.
    CHECK(cost::attention_flops(s.model, 4096, 16384) == 3096.0 * 58722304 + 8.0 * 768 * 768 * 4096);
    CHECK(cost::attention_flops(s.model, 4096, 16384) == 201131606016.0);
  }
  SECTION("TP collectives and gradient bytes") {
    const cost::AttentionLayerSizes att = cost::attention_layer_sizes(s.model, s.parallel, s.workload);
    CHECK(att.tp_allgather_bytes == 16384.0 * 768 * 2);  // the whole local sequence is gathered
    CHECK(att.tp_reducescatter_bytes == att.tp_allgather_bytes);
    CHECK(att.tp_allreduce_bytes == 0.0);
    // Attention weights 4 x 768^2 = 2359296 plus biases 4 x 768 = 3072, / tp 8 = 295296;
    // router 768 x 16 = 12288; (295296 + 12288) x 2 bytes.
    CHECK(cost::dense_gradient_bytes_per_block(s.model, s.parallel) == 615168.0);
  }
}

TEST_CASE("cost::workload sizing of Mixtral-8x7B under EP8", "[cost]") {
  const model::ModelSpec m = io::load_model("mixtral-8x7b");
  model::ParallelSpec p;  // tp 1, ep 8, dropless (capacity factor counted as 1)
  p.ep = 8;
  model::WorkloadSpec w;
  w.seq_len = 4096;
  w.micro_batch_size = 1;
  const cost::MoeLayerSizes moe = cost::moe_layer_sizes(m, p, w);
  CHECK(moe.tokens_per_rank == 4096.0);
  CHECK(moe.dispatch_bytes == 4096.0 * 2 * 4096 * 2);                    // 67108864: top-2, d 4096, bf16
  CHECK(moe.expert_forward_flops == 4096.0 * 2 * 3 * 2 * 4096 * 14336);  // SwiGLU: three GEMMs
  CHECK(moe.expert_forward_flops == 2886218022912.0);
  // 58722304 causal pairs (above) x (4 x 32 x 128 + 3 x 32); GQA projections
  // 2 x (2 x 4096 x 4096 + 2 x 4096 x 1024) x 4096 (8 KV heads of 128).
  CHECK(cost::attention_flops(m, 4096, 16384) == 16480.0 * 58722304 + 2.0 * 41943040 * 4096);
  CHECK(cost::attention_flops(m, 4096, 16384) == 1311340953600.0);
  // GQA attention: 2 x 4096^2 + 2 x 4096 x 1024 = 41943040; router 4096 x 8; x 2 bytes.
  CHECK(cost::dense_gradient_bytes_per_block(m, p) == (41943040.0 + 32768.0) * 2);
  // One expert per rank: 3 x 4096 x 14336 weights x 2 bytes.
  CHECK(cost::expert_gradient_bytes_per_block(m, p) == 3.0 * 4096 * 14336 * 2);
}

TEST_CASE("cost::causal_attention_flops sums FLOPs(1, i)", "[cost]") {
  const model::ModelSpec m = io::load_model("gpt-moe-s");
  double sum = 0;
  for (int i = 1; i <= 1000; ++i) sum += cost::attention_flops(m, 1, i);
  CHECK(cost::causal_attention_flops(m, 1000) == Approx(sum).epsilon(1e-12));
}

TEST_CASE("cost::attention_flops: the slices of any slicing add up to the unsliced layer", "[cost][property]") {
  // Second formulation: pair (query i, key j) is computed once for j <= i, so a
  // sequence of L tokens has L (L + 1) / 2 pairs and L projected tokens,
  // however it is sliced. FLOPs = (4 h k + 3 h) L (L + 1) / 2 + 2 (2 d h k + 2 d g k) L.
  std::mt19937_64 rng(2024);
  const std::int64_t widths[] = {256, 768, 1024, 4096};
  const std::int64_t heads[] = {4, 8, 16, 32};
  for (int trial = 0; trial < 300; ++trial) {
    model::ModelSpec m = io::load_model("gpt-moe-s");
    m.d_model = widths[trial % 4];
    m.num_heads = heads[(trial / 4) % 4];
    m.head_dim = m.d_model / m.num_heads;
    m.num_kv_heads = trial % 2 == 0 ? m.num_heads : m.num_heads / 4;
    const std::int64_t L = std::uniform_int_distribution<std::int64_t>(1, 200000)(rng);
    const std::int64_t d = std::uniform_int_distribution<std::int64_t>(1, std::min<std::int64_t>(L, 64))(rng);
    // A random slicing of L into d non-empty slices.
    std::vector<std::int64_t> cuts;
    for (std::int64_t i = 1; i < L; ++i) cuts.push_back(i);
    std::shuffle(cuts.begin(), cuts.end(), rng);
    cuts.resize(static_cast<std::size_t>(d - 1));
    cuts.push_back(L);
    std::sort(cuts.begin(), cuts.end());
    double sliced = 0;
    std::int64_t start = 0;
    for (std::int64_t end : cuts) {
      sliced += cost::attention_flops(m, static_cast<double>(end - start), static_cast<double>(end));
      start = end;
    }
    const double Ld = static_cast<double>(L);
    const double h = static_cast<double>(m.num_heads), k = static_cast<double>(m.head_dim);
    const double dm = static_cast<double>(m.d_model), g = static_cast<double>(m.num_kv_heads);
    const double whole = (4 * h * k + 3 * h) * Ld * (Ld + 1) / 2 + 2 * (2 * dm * h * k + 2 * dm * g * k) * Ld;
    INFO("L " << L << " d " << d);
    CHECK(sliced == Approx(whole).epsilon(1e-12));
    CHECK(cost::causal_attention_flops(m, Ld) == Approx(whole).epsilon(1e-12));
  }
}

TEST_CASE("cost::workload sizing with expert tensor parallelism", "[cost]") {
  const model::ModelSpec m = io::load_model("mixtral-8x7b");
  model::ParallelSpec p;
  p.tp = 4;
  p.sequence_parallel = true;
  p.ep = 2;
  p.etp = 4;
  model::WorkloadSpec w;
  w.seq_len = 8192;
  const cost::MoeLayerSizes moe = cost::moe_layer_sizes(m, p, w);
  // 8192 / tp 4 = 2048 local tokens; x top-2 x d 4096 x 2 bytes = 33554432 dispatched;
  // the ETP AllGather collects 4 ranks' worth.
  CHECK(moe.dispatch_bytes == 33554432.0);
  CHECK(moe.etp_allgather_bytes == 4 * 33554432.0);
  CHECK(moe.expert_forward_flops == 2048.0 * 2 * 3 * 2 * 4096 * 14336);
}

TEST_CASE("cost::attention FLOPs with multi-head latent attention", "[cost]") {
  // d 8, 2 heads; MLA q_lora 4, kv_lora 2, nope 3, rope 1, v 2: matmul weights
  // q_a 32 + kv_a 24 (whole on every tp rank) + q_b 32 + kv_b 20 + O 32 = 140.
  model::ModelSpec m;
  m.d_model = 8;
  m.num_heads = m.num_kv_heads = 2;
  m.head_dim = 4;  // nope + rope
  m.mla = model::MlaSpec{4, 2, 3, 1, 2};
  // Per causal pair: QK^T 2 h qk = 16, AV 2 h v = 8, softmax 3 h = 6: 30. Four
  // queries of a four-token context: 4 x 5 / 2 = 10 pairs.
  CHECK(cost::attention_core_flops(m, 4, 4) == 300.0);
  CHECK(cost::attention_projection_flops(m, 4) == 2.0 * 140 * 4);
  CHECK(cost::attention_flops(m, 4, 4) == 1420.0);
  model::ParallelSpec p;
  p.tp = 2;
  SECTION("without sequence parallelism every tp rank runs the down-projections whole") {
    // 1420 / 2 + the other half of 2 x 56 x 4 = 224 FLOPs of down-projections.
    CHECK(cost::attention_flops_per_rank(m, p, 1, 4, 4) == 934.0);
    // Two sequences: twice that.
    CHECK(cost::attention_flops_per_rank(m, p, 2, 4, 4) == 1868.0);
  }
  SECTION("with it each runs them on its share of the sequence") {
    p.sequence_parallel = true;
    CHECK(cost::attention_flops_per_rank(m, p, 1, 4, 4) == 710.0);
  }
  SECTION("without MLA nothing is replicated") {
    model::ModelSpec plain = m;
    plain.mla.reset();
    // (4 h k + 3 h) = 38 per pair x 10, + 2 x (2 d h k + 2 d g k) x 4 = 2 x 256 x 4.
    CHECK(cost::attention_flops(plain, 4, 4) == 380.0 + 2048.0);
    CHECK(cost::attention_flops_per_rank(plain, p, 1, 4, 4) == (380.0 + 2048.0) / 2);
  }
}
