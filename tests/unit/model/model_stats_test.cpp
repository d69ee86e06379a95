#include <catch2/catch.hpp>

#include <moeplan/io/loader.hpp>
#include <moeplan/model/model_stats.hpp>

using moeplan::model::count_params;
using moeplan::model::FfnType;
using moeplan::model::ModelSpec;

namespace {

// A model small enough to count by hand.
ModelSpec tiny_model() {
  ModelSpec m;
  m.name = "tiny";
  m.num_layers = 2;
  m.d_model = 4;
  m.num_heads = 2;
  m.num_kv_heads = 2;
  m.head_dim = 2;
  m.ffn_hidden = 8;
  m.ffn_type = FfnType::GeluFfn;
  m.vocab_size = 10;
  m.tie_embeddings = true;
  m.moe.num_experts = 4;
  m.moe.top_k = 2;
  m.moe.capacity_factor = 1.0;
  m.moe.expert_type = FfnType::SwiGlu;
  m.moe.expert_ffn_hidden = 6;
  m.moe_layer = {false, true};
  return m;
}

}  // namespace

TEST_CASE("model::count_params counts a tiny model by hand", "[model]") {
  const ModelSpec m = tiny_model();
  const auto c = count_params(m);
  // embedding 10*4 = 40 (tied); final LayerNorm 8.
  // each block: attention 4 * 4*4 = 64, two LayerNorms 16.
  // dense block FFN (GELU): 2*4*8 = 64  -> 144.
  // MoE block: router 4*4 = 16, 4 SwiGLU experts of 3*4*6 = 72 -> 288; total 64+16+16+288 = 384,
  //            active 64+16+16+2*72 = 240.
  CHECK(c.embedding == 40);
  CHECK(c.total == 40 + 8 + 144 + 384);
  CHECK(c.active_per_token == 40 + 8 + 144 + 240);
}

TEST_CASE("model::forward_matmul_flops_per_token is 2 FLOPs per active weight", "[model]") {
  const ModelSpec m = tiny_model();
  // LM head 40 + attention 2*64 + dense FFN 64 + router 16 + 2 experts * 72 = 392 weights.
  CHECK(moeplan::model::forward_matmul_flops_per_token(m) == Approx(2.0 * 392));
  // Causal attention adds 2 * layers * seq * heads * head_dim = 2*2*16*4 = 256 at seq 16.
  CHECK(moeplan::model::forward_flops_per_token(m, 16) == Approx(2.0 * 392 + 256));
}

TEST_CASE("model::count_params matches public model cards", "[model][zoo]") {
  struct Card {
    const char* name;
    double total;
    double total_tolerance;
    double active;
    double active_tolerance;
  };
  // Model cards: Mixtral-8x22B 141B/39B, Mixtral-8x7B 46.7B/12.9B, Qwen2-57B-A14B 57B/14B.
  const Card cards[] = {
      {"mixtral-8x22b", 141e9, 0.02, 39e9, 0.03},
      {"mixtral-8x7b", 46.7e9, 0.02, 12.9e9, 0.02},
      {"qwen2-57b-a14b", 57e9, 0.03, 14e9, 0.03},
  };
  for (const Card& card : cards) {
    INFO(card.name);
    const auto c = count_params(moeplan::io::load_model(card.name));
    CHECK(static_cast<double>(c.total) == Approx(card.total).epsilon(card.total_tolerance));
    CHECK(static_cast<double>(c.active_per_token) == Approx(card.active).epsilon(card.active_tolerance));
  }
}

TEST_CASE("model::count_params reproduces FlowMoE Table 2 expert parameters", "[model][zoo]") {
  // Table 2 "# Params (Experts)": L x E x 2 M H (no biases).
  struct Row {
    const char* name;
    double experts_params;
  };
  const Row rows[] = {{"gpt2-tiny-moe", 50.4e6},  {"bert-large-moe", 806.5e6}, {"llama2-moe", 4297.6e6},
                      {"llama2-moe-l", 8595.2e6}, {"deepseek-v2-s", 2014.1e6}, {"deepseek-v2-m", 3524.7e6}};
  for (const Row& row : rows) {
    INFO(row.name);
    const ModelSpec m = moeplan::io::load_model(row.name);
    const double experts = static_cast<double>(
        m.num_layers * m.moe.num_experts *
        moeplan::model::ffn_params(m.d_model, m.moe.expert_ffn_hidden, m.moe.expert_type, m.linear_bias));
    CHECK(experts == Approx(row.experts_params).epsilon(0.005));
  }
}
