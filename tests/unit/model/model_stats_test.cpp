#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <moeplan/core/error.hpp>
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

namespace {

// A three-block model with multi-head latent attention, the first block dense
// (first_k_dense: 1), shared experts and Qwen2-MoE's shared-expert gate, as
// the text format writes it: small enough to count by hand.
const char* kTinyMla = R"(
name: "tiny-mla"
num_layers: 3
d_model: 8
num_heads: 2
ffn_hidden: 5
ffn_type: SWIGLU
vocab_size: 10
norm_type: RMSNORM
dtype_bytes: 2
mla { q_lora_rank: 4 kv_lora_rank: 2 qk_nope_head_dim: 3 qk_rope_head_dim: 1 v_head_dim: 2 }
moe {
  num_experts: 4 top_k: 2 dropless: true expert_type: SWIGLU expert_ffn_hidden: 3
  num_shared_experts: 1 shared_expert_ffn_hidden: 6 shared_expert_gate: true first_k_dense: 1
}
)";

}  // namespace

TEST_CASE("model::count_params counts MLA, first_k_dense and a shared-expert gate by hand", "[model]") {
  const ModelSpec m = moeplan::io::load_model_text("tiny-mla.textproto", kTinyMla);
  // Query/key heads are nope + rope = 4 wide (head_dim defaults to it); values 2.
  CHECK(m.head_dim == 4);
  CHECK(m.value_head_dim() == 2);
  CHECK(m.moe_layer == std::vector<bool>{false, true, true});
  // MLA weights (d 8, h 2): q_a 8x4 = 32 and kv_a 8x(2+1) = 24 whole on every tp
  // rank; q_b 4x2x4 = 32, kv_b 2x2x(3+2) = 20, O 2x2x8 = 32 split: 84 + 56 = 140.
  const auto w = moeplan::model::attention_matmul_weights(m);
  CHECK(w.split == 84);
  CHECK(w.replicated == 56);
  // Parameters add the latent norms, 4 + 2 = 6, whole on every rank: 146; per rank at tp 2, 84 / 2 + 62 = 104.
  CHECK(moeplan::model::attention_params(m).total() == 146);
  CHECK(moeplan::model::attention_params_per_rank(m, 2) == 104.0);
  // Embedding 10 x 8 x 2 = 160 (untied), final RMSNorm 8. Each block: attention 146 + norms 16.
  // Block 0 (dense SwiGLU 3 x 8 x 5 = 120): 282. MoE blocks: router 8 x 4 = 32, gate 8,
  // experts 4 x (3 x 8 x 3) = 288, shared 3 x 8 x 6 = 144: 634 each; active 162 + 32 + 8 + 2 x 72 + 144 = 490.
  const auto c = count_params(m);
  CHECK(c.total == 160 + 8 + 282 + 2 * 634);
  CHECK(c.active_per_token == 160 + 8 + 282 + 2 * 490);
  // Matmul weights per token: LM head 80, block 0 140 + 120, MoE blocks 140 + 32 + 8 + 144 + 144 = 468.
  CHECK(moeplan::model::forward_matmul_flops_per_token(m) == 2.0 * (80 + 260 + 2 * 468));
  // Attention over 16 tokens: layers x seq x h x (qk + v) = 3 x 16 x 2 x 6 = 576.
  CHECK(moeplan::model::forward_flops_per_token(m, 16) == 2.0 * 1276 + 576);
}

TEST_CASE("MLA, first_k_dense and routing metadata are checked", "[model]") {
  auto error_of = [](const std::string& text) {
    try {
      moeplan::io::load_model_text("m.textproto", text);
    } catch (const moeplan::Error& e) {
      return e.field() + ": " + e.reason();
    }
    return std::string("accepted");
  };
  const std::string base = kTinyMla;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    const std::size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  CHECK(error_of(base) == "accepted");
  // head_dim, when written, must be the query/key width nope + rope = 4.
  CHECK_THAT(error_of(with("num_heads: 2", "num_heads: 2 head_dim: 3")), Catch::StartsWith("head_dim: with mla"));
  CHECK(error_of(with("num_heads: 2", "num_heads: 2 head_dim: 4")) == "accepted");
  // Every query head has its own key and value.
  CHECK_THAT(error_of(with("num_heads: 2", "num_heads: 2 num_kv_heads: 1")), Catch::StartsWith("num_kv_heads:"));
  CHECK_THAT(error_of(with("dtype_bytes: 2", "dtype_bytes: 2 qkv_bias: true")), Catch::StartsWith("qkv_bias:"));
  CHECK_THAT(error_of(with("kv_lora_rank: 2 ", "")), Catch::StartsWith("mla.kv_lora_rank: required"));
  CHECK_THAT(error_of(with("v_head_dim: 2", "v_head_dim: 0")), Catch::StartsWith("mla.v_head_dim: must be positive"));
  // Without q_lora_rank, Q is projected at full rank: d x h x (nope + rope) = 8 x 2 x 4 = 64 split weights.
  const ModelSpec full_q = moeplan::io::load_model_text("m.textproto", with("q_lora_rank: 4 ", ""));
  CHECK(moeplan::model::attention_matmul_weights(full_q).split == 64 + 20 + 32);
  CHECK(moeplan::model::attention_matmul_weights(full_q).replicated == 24);
  // first_k_dense: at most the blocks there are, and not beside an explicit list.
  CHECK_THAT(error_of(with("first_k_dense: 1", "first_k_dense: 4")), Catch::StartsWith("moe.first_k_dense: must be"));
  CHECK_THAT(error_of(with("first_k_dense: 1", "first_k_dense: 1 moe_layers: 2")),
             Catch::StartsWith("moe.first_k_dense: give either"));
  CHECK_THAT(error_of(with("first_k_dense: 1", "first_k_dense: 3")), Catch::StartsWith("moe.moe_layers: no block"));
  // With an interval: blocks >= first_k_dense where the interval rule puts experts (DeepSeek's moe_layer_freq).
  CHECK(moeplan::io::load_model_text("m.textproto", with("first_k_dense: 1", "first_k_dense: 1 moe_layer_interval: 2"))
            .moe_layer == std::vector<bool>{false, false, true});
  // The gate needs shared experts to gate.
  CHECK_THAT(error_of(with("num_shared_experts: 1", "num_shared_experts: 0")),
             Catch::StartsWith("moe.shared_expert_gate:"));
  // Group-limited routing: groups split the experts; the chosen groups hold top_k experts.
  CHECK(error_of(with("first_k_dense: 1", "first_k_dense: 1 num_expert_groups: 2 topk_groups: 1 "
                                          "routed_scaling_factor: 2.5 scoring_func: \"sigmoid\"")) == "accepted");
  CHECK_THAT(error_of(with("first_k_dense: 1", "first_k_dense: 1 num_expert_groups: 3")),
             Catch::StartsWith("moe.num_expert_groups: num_experts 4 does not split into 3 groups"));
  // 1 group of 4 / 4 = 1 expert holds fewer than top_k = 2.
  CHECK_THAT(error_of(with("first_k_dense: 1", "first_k_dense: 1 num_expert_groups: 4 topk_groups: 1")),
             Catch::StartsWith("moe.topk_groups: 1 groups of 1 experts hold 1 experts, fewer than top_k 2"));
  CHECK_THAT(error_of(with("first_k_dense: 1", "first_k_dense: 1 topk_groups: 1")),
             Catch::StartsWith("moe.topk_groups: needs moe.num_expert_groups"));
  CHECK_THAT(error_of(with("first_k_dense: 1", "first_k_dense: 1 scoring_func: \"relu\"")),
             Catch::StartsWith("moe.scoring_func: must be softmax or sigmoid"));
  CHECK_THAT(error_of(with("first_k_dense: 1", "first_k_dense: 1 routed_scaling_factor: 0")),
             Catch::StartsWith("moe.routed_scaling_factor: must be positive"));
}
