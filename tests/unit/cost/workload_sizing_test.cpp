#include <catch2/catch.hpp>

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
  SECTION("attention FLOPs, FoldMoE Eq. 5") {
    // (4 x 768 + 3 x 8) x 4096 x 16384 + 8 x 768^2 x 4096
    CHECK(cost::attention_flops(s.model, 4096, 16384) == 227096395776.0);
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
  // (4 x 4096 + 3 x 32) x 4096 x 16384 + 8 x 4096^2 x 4096
  CHECK(cost::attention_flops(m, 4096, 16384) == 1655709892608.0);
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
