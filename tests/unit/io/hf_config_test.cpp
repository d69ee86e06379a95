// moeplan import-hf: Hugging Face config.json files of public models
// (tests/data/hf/, sources in SOURCES.md there) become model files whose
// parameter counts match the published totals, and what the model format
// cannot express is refused naming the config key.

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include <moeplan/core/error.hpp>
#include <moeplan/io/hf_config.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/model_stats.hpp>

using moeplan::io::Json;

namespace {

std::string hf_file(const std::string& name) { return std::string(MOEPLAN_TEST_DATA_DIR) + "/hf/" + name + ".json"; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The config text with one key set to a JSON value, or left out (value empty).
std::string edited_text(const std::string& text, const std::string& key, const std::string& value) {
  const Json original = Json::parse(text);
  Json out = Json::object();
  for (const auto& [k, v] : original.as_object())
    if (k != key) out.set(k, v);
  if (!value.empty()) out.set(key, Json::parse(value));
  return out.dump();
}
std::string edited(const std::string& name, const std::string& key, const std::string& value) {
  return edited_text(read_file(hf_file(name)), key, value);
}

// The key an import is refused at, and why ("" when it is accepted).
std::string refusal(const std::string& json, moeplan::io::HfImportOptions options = {}) {
  try {
    moeplan::io::import_hf_config_text("config.json", json, options);
  } catch (const moeplan::Error& e) {
    CHECK(e.kind() == moeplan::ErrorKind::Input);
    CHECK(e.location().file == "config.json");
    return e.field() + ": " + e.reason();
  }
  return "";
}

}  // namespace

TEST_CASE("io::import_hf_config reproduces the published parameter counts", "[io][hf]") {
  struct Card {
    const char* file;
    std::int64_t total, active;           // counted by hand (below), this repository's convention
    double published_total, published_active;
    bool active_without_input_embedding;  // DeepSeek counts activated parameters without the embedding table
  };
  // By hand, per block (d = hidden_size, SwiGLU FFN 3 d H, RMSNorms d each):
  // Mixtral-8x7B: attention 2 d 4096 + 2 d 1024 = 41,943,040, router 8 d, 8
  //   experts of 3 d 14336; embedding and head 2 x 32000 d; 32 blocks:
  //   46,702,792,704 total, 12,879,925,248 active (top-2). Card: 46.7B / 12.9B.
  // Mixtral-8x22B: d 6144, 56 blocks, GQA 48 / 8 heads of 128, experts 3 d 16384:
  //   140,620,634,112 / 39,152,031,744. Card: 141B / 39B.
  // Qwen2-57B-A14B: d 3584, 28 blocks, QKV bias 3584 + 1024, 64 experts of 3 d
  //   2560, one shared expert of 3 d 20480 and its d x 1 gate, router 64 d,
  //   vocabulary 151936 untied: 57,408,658,944 / 14,249,270,784. Qwen2 report: 57B / 14B.
  // Qwen3-30B-A3B: d 2048, 48 blocks, 32 / 4 heads of 128 (Q 2048 x 4096), 128
  //   experts of 3 d 768, top-8: 30,532,110,336 / 3,353,020,416 (its per-head Q/K
  //   norms, 12,288 weights, not counted). Card: 30.5B / 3.3B.
  // DeepSeek-V3: d 7168, 61 blocks; MLA q_a d 1536 + norm 1536 + q_b 1536 x 128 x
  //   192 + kv_a d (512 + 64) + norm 512 + kv_b 512 x 128 x 256 + O 128 x 128 x d
  //   = 187,107,328 per block; 3 dense blocks of 3 d 18432; 58 MoE blocks of 256
  //   experts of 3 d 2048, one shared, router 256 d; embedding and head 2 x
  //   129280 d: 671,026,404,352 total, 37,552,282,624 active, 36,625,603,584
  //   without the embedding table. Report: 671B / 37B; README_WEIGHTS.md 36.6B.
  // DeepSeek-V2-Lite: d 2048, 27 blocks; MLA without q_lora: q d x 16 x 192 +
  //   kv_a d x 576 + norm 512 + kv_b 512 x 16 x 256 + O 16 x 128 x d; one dense
  //   block of 3 d 10944; 26 MoE blocks of 64 experts of 3 d 1408, shared 2 x
  //   1408 wide, top-6: 15,706,484,224 total, 2,661,150,208 active,
  //   2,451,435,008 without the embedding table. Card: 15.7B / 2.4B.
  // Dense (no experts; active = total), per block attention Q and O d x heads x
  // head_dim, K and V d x kv_heads x head_dim, a gated MLP 3 d ffn, two RMSNorms d:
  // Llama-3-8B: d 4096, 32 / 8 heads of 128, ffn 14336, 32 blocks, vocabulary
  //   128256 untied: 32 x 218,112,000 + 2 x 525,336,576 + 4096 = 8,030,261,248.
  //   Llama-3.1-8B: the same shapes (only rope scaling differs).
  // Llama-3-70B: d 8192, 64 / 8 heads, ffn 28672, 80 blocks: 80 x 855,654,400 +
  //   2 x 1,050,673,152 + 8192 = 70,553,706,496.
  // Mistral-7B-v0.3: d 4096, 32 / 8 heads, ffn 14336, vocabulary 32768: 32 x
  //   218,112,000 + 2 x 134,217,728 + 4096 = 7,248,023,552.
  // Qwen2-7B: d 3584, 28 / 4 heads of 128, QKV bias 3584 + 2 x 512, ffn 18944,
  //   vocabulary 152064: 28 x 233,057,792 + 2 x 544,997,376 + 3584 = 7,615,616,512.
  // Qwen3-8B: d 4096, 32 / 8 heads of 128, ffn 12288, 36 blocks, vocabulary
  //   151936: 36 x 192,946,176 + 2 x 622,329,856 + 4096 = 8,190,726,144 (per-head
  //   Q/K norms, 9,216 weights, not counted). Card: 8.2B.
  // Llama-3.1-405B: d 16384, 128 / 8 heads of 128, ffn 53248, 126 blocks:
  //   126 x 3,187,703,808 + 2 x 2,101,346,304 + 16384 = 405,853,388,800.
  // DeepSeek-V2: d 5120, 60 blocks; MLA q_a d 1536 + norm 1536 + q_b 1536 x 128
  //   x 192 + kv_a d x 576 + norm 512 + kv_b 512 x 128 x 256 + O 128 x 128 x d =
  //   149,227,520, norms 10,240; one dense block of 3 d 12288; 59 MoE blocks of
  //   160 experts of 3 d 1536 (23,592,960 each), a shared 2 x 1536 wide, router
  //   160 d: 235,741,434,880 total; top-6: 21,375,800,320 active, 20,851,512,320
  //   without the embedding table. Report: 236B / 21B.
  // GPT-OSS-120B: d 2880, 36 blocks, 64 / 8 heads of 64; attention 2 d 4096 + 2 d
  //   512 = 26,542,080 with biases 4096 + 512 + 512 + 2880 = 8,000 and 64 sinks;
  //   norms 2 d; router 128 d = 368,640; 128 experts of 3 d 2880 with biases
  //   2 x 2880 + 2880 = 24,891,840 each; embedding and head 2 x 201088 d =
  //   1,158,266,880; final norm d: 36 x 3,213,080,064 + 1,158,269,760 =
  //   116,829,152,064 total; top-4: 36 x 126,491,904 + 1,158,269,760 =
  //   5,711,978,304 active, 5,132,844,864 without the embedding table. Card:
  //   116.8B ("117B") / 5.1B.
  // GPT-OSS-20B: the same blocks with 32 experts (router 92,160), 24 of them:
  //   24 x 823,186,944 + 1,158,269,760 = 20,914,756,416 total; 24 x 126,215,424 +
  //   1,158,269,760 = 4,187,439,936 active, 3,608,306,496 without the embedding
  //   table. Card: 21B (20.9B) / 3.6B.
  const Card cards[] = {
      {"gpt-oss-120b", 116829152064, 5711978304, 116.8e9, 5.1e9, true},
      {"gpt-oss-20b", 20914756416, 4187439936, 20.9e9, 3.6e9, true},
      {"llama-3.1-405b", 405853388800, 405853388800, 405e9, 405e9, false},
      {"deepseek-v2", 235741434880, 21375800320, 236e9, 21e9, true},
      {"llama-3-8b", 8030261248, 8030261248, 8.03e9, 8.03e9, false},
      {"llama-3.1-8b", 8030261248, 8030261248, 8.03e9, 8.03e9, false},
      {"llama-3-70b", 70553706496, 70553706496, 70.6e9, 70.6e9, false},
      {"mistral-7b-v0.3", 7248023552, 7248023552, 7.25e9, 7.25e9, false},
      {"qwen2-7b", 7615616512, 7615616512, 7.62e9, 7.62e9, false},
      {"qwen3-8b", 8190726144, 8190726144, 8.2e9, 8.2e9, false},
      {"mixtral-8x7b", 46702792704, 12879925248, 46.7e9, 12.9e9, false},
      {"mixtral-8x22b", 140620634112, 39152031744, 141e9, 39e9, false},
      {"qwen2-57b-a14b", 57408658944, 14249270784, 57e9, 14e9, false},
      {"qwen3-30b-a3b", 30532110336, 3353020416, 30.5e9, 3.3e9, false},
      {"deepseek-v3", 671026404352, 37552282624, 671e9, 37e9, true},
      {"deepseek-v2-lite", 15706484224, 2661150208, 15.7e9, 2.4e9, true},
  };
  for (const Card& card : cards) {
    INFO(card.file);
    moeplan::io::HfImportOptions options;
    options.drop_mtp = true;
    const moeplan::io::HfImport imported = moeplan::io::import_hf_config(hf_file(card.file), options);
    const moeplan::model::ParamCounts c = moeplan::model::count_params(imported.model);
    CHECK(c.total == card.total);
    CHECK(c.active_per_token == card.active);
    const double embedding_table = static_cast<double>(imported.model.vocab_size * imported.model.d_model);
    const double active =
        static_cast<double>(c.active_per_token) - (card.active_without_input_embedding ? embedding_table : 0.0);
    // The bar: total within 1%, active within 3% (published active counts are rounded).
    CHECK(static_cast<double>(c.total) == Approx(card.published_total).epsilon(0.01));
    CHECK(active == Approx(card.published_active).epsilon(0.03));
    // The text written loads back as the same model.
    const moeplan::model::ModelSpec again = moeplan::io::load_model_text("again.textproto", imported.text);
    CHECK(moeplan::model::count_params(again).total == c.total);
  }
}

TEST_CASE("io::import_hf_config maps each family's keys", "[io][hf]") {
  moeplan::io::HfImportOptions drop;
  drop.drop_mtp = true;
  SECTION("dense families: no experts, a gated MLP of intermediate_size in every block") {
    const moeplan::io::HfImport q = moeplan::io::import_hf_config(hf_file("qwen2-7b"));
    CHECK(q.model_type == "qwen2");
    CHECK(q.model.is_dense());
    CHECK(q.model.num_moe_layers() == 0);
    CHECK(q.model.ffn_hidden == 18944);
    CHECK(q.model.ffn_type == moeplan::model::FfnType::SwiGlu);
    CHECK(q.model.qkv_bias);  // Qwen2Attention's q, k, v projections have biases
    CHECK(q.text.find("moe {") == std::string::npos);
    const moeplan::io::HfImport l = moeplan::io::import_hf_config(hf_file("llama-3-70b"));
    CHECK(l.model.is_dense());
    CHECK_FALSE(l.model.qkv_bias);
    CHECK(l.model.num_kv_heads == 8);
  }
  SECTION("DeepSeek-V3: MLA, three dense blocks, one shared expert, routing metadata") {
    const moeplan::io::HfImport i = moeplan::io::import_hf_config(hf_file("deepseek-v3"), drop);
    const moeplan::model::ModelSpec& m = i.model;
    CHECK(i.model_type == "deepseek_v3");
    CHECK(m.name == "deepseek-v3");
    REQUIRE(m.mla);
    CHECK(m.mla->q_lora_rank == 1536);
    CHECK(m.mla->kv_lora_rank == 512);
    CHECK(m.head_dim == 192);  // 128 + 64
    CHECK(m.value_head_dim() == 128);
    CHECK(m.moe.first_k_dense == 3);
    CHECK(m.num_moe_layers() == 58);
    CHECK(!m.moe_layer[2]);
    CHECK(m.moe_layer[3]);
    CHECK(m.ffn_hidden == 18432);
    CHECK(m.moe.num_shared_experts == 1);
    CHECK(m.moe.shared_expert_ffn_hidden == 2048);
    CHECK(m.moe.routed_scaling_factor == 2.5);
    CHECK(m.moe.num_expert_groups == 8);
    CHECK(m.moe.topk_groups == 4);
    CHECK(m.moe.scoring_func == "sigmoid");
    CHECK(!m.moe.capacity_factor);  // dropless
    CHECK(m.dtype_bytes == 2);
    REQUIRE(i.notes.size() == 1);
    CHECK_THAT(i.notes[0], Catch::Contains("multi-token prediction"));
    CHECK_THAT(i.text, Catch::Contains("first_k_dense: 3  # first_k_dense_replace"));
  }
  SECTION("DeepSeek-V2-Lite: Q at full rank, two shared experts as one MLP") {
    const moeplan::model::ModelSpec m = moeplan::io::import_hf_config(hf_file("deepseek-v2-lite")).model;
    REQUIRE(m.mla);
    CHECK(!m.mla->q_lora_rank);
    // DeepseekV2MoE: shared experts are one MLP of n_shared_experts x moe_intermediate_size.
    CHECK(m.moe.num_shared_experts == 1);
    CHECK(m.moe.shared_expert_ffn_hidden == 2 * 1408);
    CHECK(m.moe_layer.front() == false);
    CHECK(m.num_moe_layers() == 26);
  }
  SECTION("Qwen2-MoE: shared expert with its gate, Q/K/V biases; Qwen3-MoE: explicit head_dim, no shared expert") {
    const moeplan::model::ModelSpec q2 = moeplan::io::import_hf_config(hf_file("qwen2-57b-a14b")).model;
    CHECK(q2.qkv_bias);
    CHECK(q2.moe.shared_expert_gate);
    CHECK(q2.moe.shared_expert_ffn_hidden == 20480);
    CHECK(q2.num_moe_layers() == q2.num_layers);
    CHECK(q2.ffn_hidden == 0);  // no dense block: intermediate_size has nothing to size
    const moeplan::io::HfImport q3 = moeplan::io::import_hf_config(hf_file("qwen3-30b-a3b"));
    CHECK(q3.model.head_dim == 128);  // not hidden_size / heads = 64
    CHECK(q3.model.moe.num_shared_experts == 0);
    CHECK(!q3.model.qkv_bias);
    REQUIRE(q3.notes.size() == 1);
    CHECK_THAT(q3.notes[0], Catch::Contains("Q and K RMSNorms"));
  }
  SECTION("Qwen's sparse step and dense-only blocks place the MoE blocks") {
    // decoder_sparse_step 2: block i is MoE when (i + 1) % 2 == 0, i.e. blocks 1, 3, ...
    const moeplan::model::ModelSpec every_other =
        moeplan::io::import_hf_config_text("q.json", edited("qwen3-30b-a3b", "decoder_sparse_step", "2")).model;
    CHECK(every_other.num_moe_layers() == 24);
    CHECK(!every_other.moe_layer[0]);
    CHECK(every_other.moe_layer[1]);
    CHECK(every_other.ffn_hidden == 6144);  // the dense blocks' intermediate_size
    const moeplan::model::ModelSpec listed =
        moeplan::io::import_hf_config_text("q.json", edited("qwen3-30b-a3b", "mlp_only_layers", "[0, 47]")).model;
    CHECK(listed.num_moe_layers() == 46);
    CHECK(!listed.moe_layer[0]);
    CHECK(!listed.moe_layer[47]);
    CHECK(listed.moe_layer[1]);
  }
  SECTION("--name replaces the name taken from the file") {
    moeplan::io::HfImportOptions named;
    named.name = "my-mixtral";
    CHECK(moeplan::io::import_hf_config(hf_file("mixtral-8x7b"), named).model.name == "my-mixtral");
    CHECK(moeplan::io::import_hf_config_text("/models/Mixtral_8x7B/config.json", read_file(hf_file("mixtral-8x7b")))
              .model.name == "mixtral-8x7b");
  }
}

TEST_CASE("io::import_hf_config refuses what the model format cannot express, naming the key", "[io][hf]") {
  using Catch::StartsWith;
  // Unknown architectures, dense or MoE.
  CHECK_THAT(refusal(edited("llama-3-8b", "model_type", "\"gemma\"")),
             StartsWith("model_type: 'gemma' is not a family import-hf reads"));
  // Mistral-7B-v0.1's 4096-token window (v0.3's config has null).
  CHECK_THAT(refusal(edited("mistral-7b-v0.3", "sliding_window", "4096")),
             StartsWith("sliding_window: sliding-window attention over 4096 tokens"));
  CHECK_THAT(refusal(edited("qwen3-8b", "use_sliding_window", "true")), StartsWith("use_sliding_window:"));
  CHECK_THAT(refusal(edited("llama-3-8b", "mlp_bias", "true")), StartsWith("mlp_bias:"));
  CHECK_THAT(refusal(edited("mixtral-8x7b", "model_type", "\"jamba\"")),
             StartsWith("model_type: 'jamba' is refused: Jamba's Mamba layers"));
  CHECK_THAT(refusal(edited("mixtral-8x7b", "model_type", "")), StartsWith("model_type: required"));
  // A key neither read nor listed as irrelevant may matter.
  CHECK_THAT(refusal(edited("mixtral-8x7b", "num_experts_per_group", "2")),
             StartsWith("num_experts_per_group: not read for model_type mixtral"));
  // Values the format cannot express.
  CHECK_THAT(refusal(edited("mixtral-8x7b", "sliding_window", "4096")),
             StartsWith("sliding_window: sliding-window attention over 4096 tokens"));
  CHECK_THAT(refusal(edited("qwen2-57b-a14b", "use_sliding_window", "true")), StartsWith("use_sliding_window:"));
  CHECK_THAT(refusal(edited("qwen3-30b-a3b", "attention_bias", "true")), StartsWith("attention_bias: biases on Q, K"));
  CHECK_THAT(refusal(edited("deepseek-v3", "attention_bias", "true"), {"", true}),
             StartsWith("attention_bias: biases on MLA"));
  CHECK(refusal(read_file(hf_file("deepseek-v3"))).empty());  // its MTP module kept (the case below)
  CHECK(refusal(read_file(hf_file("deepseek-v3")), {"", true}).empty());
  CHECK_THAT(refusal(edited("mixtral-8x7b", "torch_dtype", "\"int8\"")), StartsWith("torch_dtype: 'int8' is not"));
  CHECK_THAT(refusal(edited("mixtral-8x7b", "torch_dtype", "")), StartsWith("torch_dtype: required"));
  // Keys whose absence would mean a configuration class's default.
  CHECK_THAT(refusal(edited("mixtral-8x7b", "num_key_value_heads", "")), StartsWith("num_key_value_heads: required"));
  CHECK_THAT(refusal(edited("deepseek-v2-lite", "q_lora_rank", "")), StartsWith("q_lora_rank: required"));
  CHECK_THAT(refusal(edited("deepseek-v2-lite", "first_k_dense_replace", "")),
             StartsWith("first_k_dense_replace: required"));
  CHECK_THAT(refusal(edited("qwen2-57b-a14b", "shared_expert_intermediate_size", "")),
             StartsWith("shared_expert_intermediate_size: required"));
  // No experts anywhere: a dense model, which import-hf reads from its dense family.
  CHECK_THAT(refusal(edited("deepseek-v2-lite", "n_routed_experts", "null")), StartsWith("n_routed_experts: no block"));
  CHECK_THAT(refusal(edited("qwen3-30b-a3b", "num_experts", "0")), Catch::Contains("llama, mistral, qwen2, qwen3"));
  // Types and the model format's bounds, reported at the config key.
  CHECK_THAT(refusal(edited("mixtral-8x7b", "hidden_size", "4096.5")), StartsWith("hidden_size: expected an integer"));
  CHECK_THAT(refusal(edited("mixtral-8x7b", "num_local_experts", "5000")),
             StartsWith("num_local_experts: 5000 is too large"));
  CHECK_THAT(refusal(edited("mixtral-8x7b", "num_experts_per_tok", "9")),
             StartsWith("num_experts_per_tok: top_k 9 exceeds num_experts 8"));
  CHECK_THAT(refusal(edited("deepseek-v3", "topk_group", "9"), {"", true}), StartsWith("topk_group: must be in"));
  // Checked before the block rules walk the blocks (a 2^53-block model would never finish).
  CHECK_THAT(refusal(edited("deepseek-v3", "num_hidden_layers", "9007199254740992"), {"", true}),
             StartsWith("num_hidden_layers: 9007199254740992 is too large"));
  CHECK_THAT(refusal("{\"model_type\": "), Catch::Contains("invalid JSON"));
  CHECK_THAT(refusal("[1, 2]"), StartsWith(": a config.json holds one JSON object"));
}

TEST_CASE("io::import_hf_config refuses a routed_scaling_factor outside [1e-3, 1e3], naming it", "[io][hf]") {
  using Catch::StartsWith;
  // The released configs give 1.0 to 16.0 (tests/data/hf: DeepSeek-V2-Lite 1.0,
  // V3 2.5, Kimi-K2 2.827, V2 16.0); 1e308 and 1e-300 were written through.
  for (const char* bad : {"1e308", "1e-300", "0.000999", "1000.5", "0", "-2.5"}) {
    INFO(bad);
    CHECK_THAT(refusal(edited("deepseek-v3", "routed_scaling_factor", bad), {"", true}),
               StartsWith("routed_scaling_factor: "));
  }
  CHECK_THAT(refusal(edited("deepseek-v3", "routed_scaling_factor", "1e308"), {"", true}),
             Catch::Contains("is outside [0.001, 1000]"));
  for (const char* good : {"0.001", "1000", "2.5"}) {
    INFO(good);
    CHECK(refusal(edited("deepseek-v3", "routed_scaling_factor", good), {"", true}).empty());
  }
}

TEST_CASE("io::import_hf_config bounds n_shared_experts and moe_intermediate_size before multiplying them",
          "[io][hf]") {
  using Catch::StartsWith;
  const std::string wide = edited("deepseek-v3", "moe_intermediate_size", "6144");
  // 3002399751580331 x 6144 = 18446744073709553664 = 2^64 + 2048: the int64
  // product wrapped to 2048, written as shared_expert_ffn_hidden. The count
  // alone is past the model format's 4096 experts.
  CHECK(refusal(edited_text(wide, "n_shared_experts", "3002399751580331"), {"", true}) ==
        "n_shared_experts: 3002399751580331 is too large: the model format allows at most 4096");
  // Each factor within its bound, the product not: 4096 x 6144 = 25165824 > 2^20 = 1048576.
  CHECK(refusal(edited_text(wide, "n_shared_experts", "4096"), {"", true}) ==
        "n_shared_experts: 4096 shared experts of moe_intermediate_size 6144 make a shared MLP 25165824 wide, more "
        "than the model format's 1048576 (shared_expert_ffn_hidden)");
  CHECK_THAT(refusal(edited("deepseek-v3", "moe_intermediate_size", "9007199254740992"), {"", true}),
             StartsWith("moe_intermediate_size: 9007199254740992 is too large"));
  // 170 x 6144 = 1044480 <= 1048576: the widest product below the bound is kept.
  const moeplan::io::HfImport kept =
      moeplan::io::import_hf_config_text("config.json", edited_text(wide, "n_shared_experts", "170"), {"", true});
  CHECK(kept.model.moe.shared_expert_ffn_hidden == 1044480);
}

TEST_CASE("docs/formats.md lists the keys import-hf ignores, as the importer holds them", "[io][hf]") {
  const std::string doc = read_file(std::string(MOEPLAN_SOURCE_DIR) + "/docs/formats.md");
  const std::string begin = "<!-- hf-ignored-keys:begin -->\n", end = "<!-- hf-ignored-keys:end -->";
  const std::size_t a = doc.find(begin), b = doc.find(end);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  CHECK(doc.substr(a + begin.size(), b - a - begin.size()) == moeplan::io::hf_ignored_keys_markdown());
}

TEST_CASE("io::import_hf_config reads GPT-OSS: sliding-window blocks, sinks, biases everywhere", "[io][hf]") {
  using Catch::StartsWith;
  const moeplan::io::HfImport g = moeplan::io::import_hf_config(hf_file("gpt-oss-120b"));
  const moeplan::model::ModelSpec& m = g.model;
  // layer_types alternates sliding_attention (even blocks) and full_attention.
  CHECK(m.sliding_window == 128);
  REQUIRE(m.window_layer.size() == 36);
  CHECK(m.num_window_layers() == 18);
  CHECK(m.window_layer[0]);
  CHECK_FALSE(m.window_layer[1]);
  CHECK(m.window_layer[34]);
  CHECK(m.attention_sinks);
  CHECK(m.linear_bias);
  CHECK(m.dtype_bytes == 2);  // no torch_dtype in the file: BF16 training, said in a note
  CHECK(m.moe.num_experts == 128);
  CHECK(m.moe.top_k == 4);
  CHECK(m.moe.expert_ffn_hidden == 2880);
  CHECK(m.moe.glu_clamp == 7.0);  // swiglu_limit
  CHECK_THAT(refusal(edited("gpt-oss-120b", "swiglu_limit", "-1")), StartsWith("swiglu_limit: -1 is outside"));
  CHECK_THAT(refusal(edited("gpt-oss-120b", "layer_types", "[\"sliding_attention\"]")),
             StartsWith("layer_types: required: one of sliding_attention or full_attention per block (36)"));
  CHECK_THAT(refusal(edited("gpt-oss-120b", "experts_per_token", "2")),
             StartsWith("experts_per_token: 2 disagrees with num_experts_per_tok 4"));
  CHECK_THAT(refusal(edited("gpt-oss-120b", "attention_bias", "false")), StartsWith("attention_bias: this family"));
}

TEST_CASE("io::import_hf_config reads Kimi-K2: DeepSeek-V3's architecture under its own model_type", "[io][hf]") {
  // moonshotai/Kimi-K2-Instruct (tests/data/hf/SOURCES.md). By hand, as
  // DeepSeek-V3 above with 64 heads: MLA q_a d 1536 + norm 1536 + q_b 1536 x 64
  // x 192 + kv_a d x 576 + norm 512 + kv_b 512 x 64 x 256 + O 64 x 128 x d =
  // 101,124,096, norms 2 d = 14,336; one dense block of 3 d 18432 (396,361,728):
  // 497,500,160; 60 MoE blocks of 384 experts of 3 d 2048 (44,040,192 each), one
  // shared, router 384 d: 17,059,364,864 each; embedding and head 2 x 163840 d =
  // 2,348,810,240, final norm d: 1,026,408,209,408 total. Top-8: 60 x 500,252,672
  // + 497,500,160 + 2,348,817,408 = 32,861,477,888 active, 31,687,072,768
  // without the embedding table.
  // Published: "1T" total, "32B" activated (the model card's table). The 1% bar
  // cannot be checked against "1T", a figure rounded to one digit (the count is
  // 2.6% above it); no more precise figure from Moonshot was found (SOURCES.md).
  // The same formula gives DeepSeek-V3's 671B to 0.004% (above).
  const moeplan::io::HfImport k = moeplan::io::import_hf_config(hf_file("kimi-k2-instruct"));
  CHECK(k.model_type == "kimi_k2");
  const moeplan::model::ModelSpec& m = k.model;
  REQUIRE(m.mla);
  CHECK(m.num_heads == 64);
  CHECK(m.moe.num_experts == 384);
  CHECK(m.moe.top_k == 8);
  CHECK(m.moe.first_k_dense == 1);
  CHECK(m.num_moe_layers() == 60);
  CHECK(m.moe.routed_scaling_factor == 2.827);
  CHECK(k.notes.empty());  // num_nextn_predict_layers 0: no MTP module to drop
  const moeplan::model::ParamCounts c = moeplan::model::count_params(m);
  CHECK(c.total == 1026408209408);
  CHECK(c.active_per_token == 32861477888);
  CHECK(static_cast<double>(c.total) == Approx(1e12).epsilon(0.03));
  CHECK(static_cast<double>(c.active_per_token - m.vocab_size * m.d_model) == Approx(32e9).epsilon(0.03));
}

TEST_CASE("io::import_hf_config reads GLM-4.5: Q/K/V biases, a dense first block, shared and routed experts",
          "[io][hf]") {
  // zai-org/GLM-4.5-Air (tests/data/hf/SOURCES.md). By hand, d 4096: attention
  // Q d x 96 x 128 + K, V d x 8 x 128 + O 12288 x d + the Q, K, V biases
  // 12288 + 2 x 1024 = 109,066,240; norms 2 d; one dense block of 3 d 10944:
  // 243,554,304; 45 MoE blocks of 128 experts of 3 d 1408 (17,301,504 each),
  // one shared, router 128 d: 2,341,492,736 each; embedding and head 2 x 151552
  // d, final norm d: 106,852,245,504 total (+0.80% on the card's 106B). Top-8:
  // 45 x 265,312,256 + 243,554,304 + 1,241,518,080 = 13,424,123,904 active,
  // 12,182,609,920 without the embedding table and the head (the card's "12B",
  // rounded). Its one MTP layer is dropped on request, as the card's totals leave it out.
  CHECK(moeplan::io::import_hf_config(hf_file("glm-4.5-air")).model.mtp_num_layers == 1);  // kept unless dropped
  const moeplan::io::HfImport g = moeplan::io::import_hf_config(hf_file("glm-4.5-air"), {"", true});
  CHECK(g.model_type == "glm4_moe");
  const moeplan::model::ModelSpec& m = g.model;
  CHECK_FALSE(m.mla);
  CHECK(m.qkv_bias);
  CHECK(m.num_heads == 96);
  CHECK(m.num_kv_heads == 8);
  CHECK(m.moe.first_k_dense == 1);
  CHECK(m.num_moe_layers() == 45);
  CHECK(m.moe.num_shared_experts == 1);
  CHECK(m.moe.shared_expert_ffn_hidden == 1408);
  const moeplan::model::ParamCounts c = moeplan::model::count_params(m);
  CHECK(c.total == 106852245504);
  CHECK(c.active_per_token == 13424123904);
  CHECK(static_cast<double>(c.total) == Approx(106e9).epsilon(0.01));
  CHECK(static_cast<double>(c.active_per_token - 2 * m.vocab_size * m.d_model) == Approx(12e9).epsilon(0.05));
}

TEST_CASE("io::import_hf_config reads Llama 4: text_config, interleaved MoE blocks, chunked attention", "[io][hf]") {
  using Catch::StartsWith;
  // By hand (d = 5120, 40 / 8 heads of 128): attention 2 d 5120 + 2 d 1024 =
  // 62,914,560, norms 2 d; an MoE block: experts of 3 d 8192 (125,829,120 each),
  // one shared of the same width, router E d; a dense block: 3 d 16384 =
  // 251,658,240; embedding and head 2 x 202048 d = 2,068,971,520, final norm d.
  // Scout (16 experts, every block MoE): 48 x 2,202,101,760 + 2,068,976,640 =
  //   107,769,861,120 total; top-1 active 48 x 314,664,960 + 2,068,976,640 =
  //   17,172,894,720.
  // Maverick (128 experts, MoE blocks 1, 3, ..., 47): 24 x 16,295,536,640 + 24 x
  //   314,583,040 + 2,068,976,640 = 400,711,848,960 total; active 24 x
  //   315,238,400 + 24 x 314,583,040 + 2,068,976,640 = 17,184,691,200.
  // The published 109B / 400B (model cards) count the whole multimodal model:
  // the vision encoder and projector of vision_config (SOURCES.md), not
  // imported, are by hand 34 layers x 23,807,872 (Q, K, V, O 1408 x 1408 with
  // biases, MLP 1408 x 5632 x 2 with biases, two LayerNorms with biases) +
  // 1,647,360 (class and 577 x 1408 position embeddings, the 588 x 1408 patch
  // projection, two LayerNorms) + 39,845,888 (pixel-shuffle MLP 5632 x 4096 +
  // 4096 x 4096) + 20,971,520 (projector 4096 x 5120) = 871,932,416. Scout's
  // text model alone is 1.1% under 109B; with the encoder 0.3% under.
  constexpr double kVision = 871932416.0;
  struct Card {
    const char* file;
    std::int64_t total, active, moe_blocks;
    double published_total;
  };
  const Card cards[] = {
      {"llama-4-scout-17b-16e-instruct", 107769861120, 17172894720, 48, 109e9},
      {"llama-4-maverick-17b-128e-instruct", 400711848960, 17184691200, 24, 400e9},
  };
  for (const Card& card : cards) {
    INFO(card.file);
    const moeplan::io::HfImport l = moeplan::io::import_hf_config(hf_file(card.file));
    CHECK(l.model_type == "llama4");
    const moeplan::model::ParamCounts c = moeplan::model::count_params(l.model);
    CHECK(c.total == card.total);
    CHECK(c.active_per_token == card.active);
    CHECK(l.model.num_moe_layers() == card.moe_blocks);
    CHECK(static_cast<double>(c.total) + kVision == Approx(card.published_total).epsilon(0.01));
    CHECK(static_cast<double>(c.active_per_token) == Approx(17e9).epsilon(0.03));  // "17B active" (model cards)
    // No no_rope_layers in the file: Llama4TextConfig's default, a NoPE block of
    // full attention every 4th block (3, 7, ..., 47), chunks of 8192 elsewhere.
    CHECK(l.model.attention_chunk_size == 8192);
    REQUIRE(l.model.chunk_layer.size() == 48);
    CHECK(l.model.num_chunk_layers() == 36);
    CHECK(l.model.chunk_layer[0]);
    CHECK_FALSE(l.model.chunk_layer[3]);
    CHECK_FALSE(l.model.chunk_layer[47]);
    CHECK(l.model.moe.num_shared_experts == 1);
    CHECK(l.model.moe.shared_expert_ffn_hidden == 8192);
    CHECK(l.model.moe.scoring_func == "sigmoid");
    CHECK_THAT(l.text, Catch::Contains("num_layers: 48  # text_config.num_hidden_layers"));
    REQUIRE(l.notes.size() == 1);
    CHECK_THAT(l.notes[0], Catch::Contains("vision encoder"));
    const moeplan::model::ModelSpec again = moeplan::io::load_model_text("again.textproto", l.text);
    CHECK(moeplan::model::count_params(again).total == c.total);
  }
  const moeplan::model::ModelSpec maverick =
      moeplan::io::import_hf_config(hf_file("llama-4-maverick-17b-128e-instruct")).model;
  CHECK(!maverick.moe_layer[0]);
  CHECK(maverick.moe_layer[1]);
  CHECK(maverick.ffn_hidden == 16384);  // intermediate_size_mlp
  // Keys inside text_config are named with their path.
  const Json scout = Json::parse(read_file(hf_file("llama-4-scout-17b-16e-instruct")));
  auto with_text = [&](const std::string& key, const std::string& value) {
    Json text = Json::object();
    for (const auto& [k, v] : scout.find("text_config")->as_object())
      if (k != key) text.set(k, v);
    if (!value.empty()) text.set(key, Json::parse(value));
    Json out = Json::object();
    for (const auto& [k, v] : scout.as_object()) out.set(k, k == "text_config" ? text : v);
    return out.dump();
  };
  CHECK_THAT(refusal(with_text("attention_bias", "true")), StartsWith("text_config.attention_bias: biases on Q, K"));
  CHECK_THAT(refusal(with_text("some_new_key", "1")), StartsWith("text_config.some_new_key: not read"));
  CHECK_THAT(refusal(with_text("hidden_size", "5120.5")), StartsWith("text_config.hidden_size: expected an integer"));
  CHECK_THAT(refusal(with_text("attention_chunk_size", "null")), StartsWith("text_config.attention_chunk_size: required"));
  // An explicit no_rope_layers decides which blocks are chunked.
  std::string rope = "[";
  for (int i = 0; i < 48; ++i) rope += std::string(i ? ", " : "") + (i % 2 == 0 ? "1" : "0");
  const moeplan::model::ModelSpec every_other =
      moeplan::io::import_hf_config_text("s.json", with_text("no_rope_layers", rope + "]")).model;
  CHECK(every_other.num_chunk_layers() == 24);
  CHECK(every_other.chunk_layer[0]);
  CHECK_FALSE(every_other.chunk_layer[1]);
  CHECK_THAT(refusal(edited("llama-4-scout-17b-16e-instruct", "text_config", "")), StartsWith("text_config: required"));
}

TEST_CASE("io::import_hf_config refuses by name the families whose attention it cannot price", "[io][hf]") {
  using Catch::StartsWith;
  // Qwen3-Next: Gated DeltaNet linear attention in three of every four blocks.
  const std::string next = refusal(edited("qwen3-30b-a3b", "model_type", "\"qwen3_next\""));
  CHECK_THAT(next, StartsWith("model_type: 'qwen3_next' is refused"));
  CHECK_THAT(next, Catch::Contains("linear attention (Gated DeltaNet)") && Catch::Contains("cannot be priced"));
  CHECK_THAT(refusal(edited("deepseek-v3", "model_type", "\"deepseek_v32\"")),
             StartsWith("model_type: 'deepseek_v32' is refused") && Catch::Contains("sparse attention"));
  CHECK_THAT(refusal(edited("mixtral-8x7b", "model_type", "\"nemotron_h\"")), Catch::Contains("Mamba-2"));
}

TEST_CASE("io::import_hf_config keeps DeepSeek-V3's multi-token prediction module (by hand)", "[io][hf]") {
  // One module (num_nextn_predict_layers 1): a block like the MoE blocks (MLA
  // 187,107,328 + its two norms 14,336 + router 7168 x 256 = 1,835,008 + 256
  // experts and one shared of 3 x 7168 x 2048 = 44,040,192 each: 11,507,286,016),
  // its three norms 3 x 7168 and the 2d x d projection 102,760,448:
  // 11,610,067,968. With the main model's 671,026,404,352: 682,636,472,320,
  // within 1% of the card's 685B (whose MTP also stores copies of the embedding
  // and head, 2 x 129280 x 7168, which Megatron-Core shares). Active: its block
  // with 8 routed experts and the shared one, 688,100,352 more than 37,552,282,624.
  const moeplan::io::HfImport kept = moeplan::io::import_hf_config(hf_file("deepseek-v3"));
  CHECK(kept.model.mtp_num_layers == 1);
  const moeplan::model::ParamCounts c = moeplan::model::count_params(kept.model);
  CHECK(c.total == 682636472320);
  CHECK(c.active_per_token == 38240382976);
  CHECK(static_cast<double>(c.total) == Approx(685e9).epsilon(0.01));
  REQUIRE_FALSE(kept.notes.empty());
  bool said = false;
  for (const std::string& n : kept.notes) said = said || n.find("kept: 1 multi-token prediction") != std::string::npos;
  CHECK(said);
  // The text written loads back with the module.
  CHECK(moeplan::io::load_model_text("again.textproto", kept.text).mtp_num_layers == 1);
}

TEST_CASE("io::import_hf_config reads OLMoE (by hand)", "[io][hf]") {
  // allenai/OLMoE-1B-7B-0924 (tests/data/hf/SOURCES.md): d 2048, 16 blocks of
  // 16 heads (MHA: 4 d^2 = 16,777,216), two RMSNorms 4096, router 2048 x 64 =
  // 131,072 and 64 SwiGLU experts of 3 x 2048 x 1024 = 6,291,456 each
  // (402,653,184): 419,565,568 a block, 6,713,049,088 for 16; the untied
  // embedding and head 2 x 50304 x 2048 = 206,045,184 and the final norm 2048:
  // 6,919,096,320 (+0.28% on the card's 6.9B). Active, top-8: 16 x (16,777,216
  // + 4096 + 131,072 + 8 x 6,291,456) + 206,047,232 = 1,281,951,744 (-1.4% on 1.3B).
  const moeplan::io::HfImport o = moeplan::io::import_hf_config(hf_file("olmoe-1b-7b"));
  CHECK(o.model_type == "olmoe");
  CHECK(o.model.num_moe_layers() == 16);
  CHECK(o.model.moe.num_shared_experts == 0);
  CHECK(o.model.dtype_bytes == 4);  // torch_dtype float32, as released
  const moeplan::model::ParamCounts c = moeplan::model::count_params(o.model);
  CHECK(c.total == 6919096320);
  CHECK(c.active_per_token == 1281951744);
  CHECK(static_cast<double>(c.total) == Approx(6.9e9).epsilon(0.01));
  CHECK(static_cast<double>(c.active_per_token) == Approx(1.3e9).epsilon(0.03));
  bool said = false;
  for (const std::string& n : o.notes) said = said || n.find("Q and K RMSNorms") != std::string::npos;
  CHECK(said);
}

TEST_CASE("io::import_hf_config reads Granite MoE (by hand)", "[io][hf]") {
  // ibm-granite/granite-3.1-3b-a800m-instruct (tests/data/hf/SOURCES.md): d
  // 1536, 32 blocks of 24 heads of 64 and 8 KV heads (Q and O 1536^2 each, K and
  // V 1536 x 512 each: 6,291,456), two RMSNorms 3072, router 1536 x 40 = 61,440,
  // 40 SwiGLU experts of 3 x 1536 x 512 = 2,359,296 (94,371,840): 100,727,808 a
  // block, 3,223,289,856 for 32; the tied embedding 49155 x 1536 = 75,502,080
  // and the final norm 1536: 3,298,793,472 (-0.04% on 3.3B). Active, top-8:
  // 32 x (6,291,456 + 3072 + 61,440 + 8 x 2,359,296) = 807,370,752, with the
  // embedding and final norm 882,874,368; without the table 807,372,288 (+0.92% on 800M).
  const moeplan::io::HfImport g = moeplan::io::import_hf_config(hf_file("granite-3.1-3b-a800m"));
  CHECK(g.model_type == "granitemoe");
  CHECK(g.model.tie_embeddings);
  CHECK(g.model.num_moe_layers() == 32);
  const moeplan::model::ParamCounts c = moeplan::model::count_params(g.model);
  CHECK(c.total == 3298793472);
  CHECK(c.active_per_token == 882874368);
  CHECK(static_cast<double>(c.total) == Approx(3.3e9).epsilon(0.01));
  CHECK(static_cast<double>(c.active_per_token - 49155 * 1536) == Approx(0.8e9).epsilon(0.03));
}
