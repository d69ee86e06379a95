#include <moeplan/io/hf_config.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/size_bounds.hpp>

#include "proto_text.hpp"

namespace moeplan::io {
namespace {

using model::kMaxExperts;
using model::kMaxHidden;
using model::kMaxLayers;

// Keys read by no family because they change nothing moeplan plans (the
// table docs/formats.md prints). A key outside this list and outside what
// the config's family reads is an error: it may matter.
std::vector<HfIgnoredKey> make_ignored_keys() {
  const char* token = "a special token's id";
  const char* loss = "a load-balancing loss setting: one scalar per step, no GEMM or collective";
  const char* rope = "rotary position encoding: element-wise, no GEMM or collective";
  return {
      {"architectures", "the Python class; model_type names the architecture"},
      {"auto_map", "Python classes for remote code"},
      {"_name_or_path", "where the config was loaded from"},
      {"transformers_version", "the version of the library that wrote the file"},
      {"bos_token_id", token},
      {"eos_token_id", token},
      {"pad_token_id", token},
      {"use_cache", "inference: keeps keys and values between decoding steps"},
      {"initializer_range", "the initialisation of the weights"},
      {"attention_dropout", "a dropout probability: no work (the memory model counts the dropout masks)"},
      {"rms_norm_eps", "the RMSNorm's epsilon"},
      {"hidden_act",
       "the activation inside the gated MLP (SiLU in these families): the MLP's three GEMMs are the same whatever "
       "it is"},
      {"rope_theta", rope},
      {"rope_scaling", rope},
      {"rope_parameters", rope},
      {"max_position_embeddings",
       "the longest context the rotary model was trained for; the scenario's workload.seq_len sets the context "
       "(moeplan's field of that name counts learned position tables, which these models do not have)"},
      {"router_aux_loss_coef", loss},
      {"aux_loss_alpha", loss},
      {"seq_aux", loss},
      {"output_router_logits", "whether the forward pass returns the router's logits (for the loss)"},
      {"router_jitter_noise", "multiplicative noise on the router's input during training: no work"},
      {"norm_topk_prob", "normalises the top-k routing weights: no work"},
      {"topk_method",
       "how DeepSeek's router picks experts (greedy, group_limited_greedy, noaux_tc); its groups are kept as "
       "moe.num_expert_groups and moe.topk_groups. noaux_tc's correction bias (n_routed_experts parameters per "
       "MoE block, 14,848 in DeepSeek-V3) is not counted"},
      {"ep_size", "DeepSeek's expert-parallel size for inference; the scenario maps parallelism"},
      {"pretraining_tp", "a switch for numerics under tensor parallelism at pretraining; no work"},
      {"quantization_config",
       "the storage format of the released weights (DeepSeek-V3: FP8 blocks); moeplan plans training at "
       "torch_dtype's element size"},
      {"max_window_layers", "Qwen's sliding-window layers, used only with use_sliding_window (which must be false)"},
      {"initial_context_length", "GPT-OSS's context before YaRN scaling: rotary encoding, no GEMM"},
      {"boi_token_index", token},
      {"eoi_token_index", token},
      {"image_token_index", token},
      {"attn_temperature_tuning",
       "Llama 4 scales the queries of its full-attention (NoPE) blocks by a function of the position: "
       "element-wise, no GEMM"},
      {"floor_scale", "a parameter of Llama 4's query temperature tuning (attn_temperature_tuning)"},
      {"attn_scale", "a parameter of Llama 4's query temperature tuning (attn_temperature_tuning)"},
      {"for_llm_compressor", "a switch of Llama 4's loading code for the llm-compressor tool; no work"},
  };
}

// The families import-hf reads: MoE, then dense (a model without `moe`).
const std::vector<std::string> kModelTypes = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3",
                                              "kimi_k2", "glm4_moe",  "gpt_oss",   "llama4",      "olmoe",
                                              "granitemoe", "llama",  "mistral",   "qwen2",       "qwen3"};
const std::set<std::string> kDenseTypes = {"llama", "mistral", "qwen2", "qwen3"};

// Families whose attention (or its replacement) the model format cannot
// express: refused by name with the reason, never imported as something else.
const std::map<std::string, std::string> kRefusedTypes = {
    {"qwen3_next",
     "Qwen3-Next's linear attention (Gated DeltaNet) layers, three of every four blocks, cannot be priced by "
     "moeplan's attention model (softmax attention over query-key pairs)"},
    {"deepseek_v32",
     "DeepSeek-V3.2's sparse attention (a lightning indexer picks the keys each query attends to) cannot be priced "
     "by moeplan's attention model (softmax attention over every causal query-key pair)"},
    {"jamba", "Jamba's Mamba layers (a state-space scan, no attention) cannot be priced by moeplan's attention model"},
    {"nemotron_h",
     "Nemotron-H's Mamba-2 layers (a state-space scan, no attention) cannot be priced by moeplan's attention model"},
    {"granitemoehybrid",
     "Granite 4.0's Mamba-2 layers (a state-space scan, no attention) cannot be priced by moeplan's attention "
     "model"},
};

// Values of one config, by key, and which keys a family read.
class Config {
 public:
  // `prefix`: where a nested object sits ("text_config."), for the keys errors name.
  Config(std::string path, const Json& root, std::string prefix = "")
      : path_(std::move(path)), root_(root), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& reason) const {
    throw Error(ErrorKind::Input, reason, prefix_ + key, SourceLocation{path_, 0, 0});
  }
  const std::string& path() const { return path_; }

  // The value of a key; null counts as not given.
  const Json* find(const std::string& key) {
    read_.insert(key);
    const Json* v = root_.find(key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }
  bool has(const std::string& key) { return find(key) != nullptr; }
  // Whether the key is in the file at all, null included.
  bool written(const std::string& key) {
    read_.insert(key);
    return root_.find(key) != nullptr;
  }

  std::optional<std::int64_t> integer_if(const std::string& key, std::int64_t min = 1) {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    // JSON numbers arrive as doubles; 2^53 is where they stop being exact integers.
    if (!v->is_number() || v->as_number() != std::floor(v->as_number()) || std::fabs(v->as_number()) > 0x1p53)
      fail(key, "expected an integer");
    const auto value = static_cast<std::int64_t>(v->as_number());
    if (value < min) fail(key, fmt::format("must be at least {}, got {}", min, value));
    return value;
  }
  // A value read by integer(): at most `max`, the model format's bound.
  void at_most(const std::string& key, std::int64_t value, std::int64_t max) const {
    if (value > max) fail(key, fmt::format("{} is too large: the model format allows at most {}", value, max));
  }
  std::int64_t integer(const std::string& key, std::int64_t min = 1) {
    if (const auto v = integer_if(key, min)) return *v;
    fail(key, "required: not given (or null)");
  }
  std::optional<double> number_if(const std::string& key) {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) fail(key, "expected a number");
    return v->as_number();
  }
  std::optional<bool> boolean_if(const std::string& key) {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_bool()) fail(key, "expected true or false");
    return v->as_bool();
  }
  std::optional<std::string> string_if(const std::string& key) {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) fail(key, "expected a string");
    return v->as_string();
  }
  std::vector<std::int64_t> integers(const std::string& key) {
    const Json* v = find(key);
    std::vector<std::int64_t> out;
    if (v == nullptr) return out;
    if (!v->is_array()) fail(key, "expected a list of integers");
    for (const Json& item : v->as_array()) {
      if (!item.is_number() || item.as_number() != std::floor(item.as_number()) || item.as_number() < 0 ||
          item.as_number() > 0x1p53)
        fail(key, "expected a list of non-negative integers");
      out.push_back(static_cast<std::int64_t>(item.as_number()));
    }
    return out;
  }

  // Every key the family did not read must be one that changes nothing.
  void check_every_key_read(const std::string& model_type) const {
    for (const auto& entry : root_.as_object()) {
      const std::string& key = entry.first;  // a named reference: clang 14 captures no structured binding
      if (read_.count(key)) continue;
      const auto& ignored = hf_ignored_keys();
      if (std::any_of(ignored.begin(), ignored.end(), [&](const HfIgnoredKey& k) { return k.key == key; })) continue;
      fail(key, fmt::format("not read for model_type {} and not among the keys irrelevant to planning "
                            "(docs/formats.md, import-hf): it may change what is planned",
                            model_type));
    }
  }

 private:
  std::string path_;
  const Json& root_;
  std::string prefix_;
  std::set<std::string> read_;
};

// The model file being written: fields in text format, each with the config
// key it came from as a comment and in `sources` (for errors).
class ModelText {
 public:
  void field(const std::string& name, const std::string& value, const std::string& key = "") {
    const std::string source = key.empty() ? "" : key_prefix_ + key;
    text_ += indent_ + name + ": " + value + (source.empty() ? "" : "  # " + source) + "\n";
    if (!source.empty()) sources_[prefix_ + name] = source;
  }
  // Config keys read from here on sit in a nested object ("text_config.").
  void set_key_prefix(const std::string& prefix) { key_prefix_ = prefix; }
  void field(const std::string& name, std::int64_t value, const std::string& key = "") {
    field(name, std::to_string(value), key);
  }
  void open(const std::string& block) {
    text_ += indent_ + block + " {\n";
    indent_ += "  ";
    prefix_ = block + ".";
  }
  void close() {  // blocks nest one deep (moe, mla)
    indent_.clear();
    prefix_.clear();
    text_ += "}\n";
  }
  const std::string& text() const { return text_; }
  // The config key behind a model field path (or its longest written prefix).
  std::string source_of(std::string field) const {
    while (!field.empty()) {
      if (const auto it = sources_.find(field); it != sources_.end()) return it->second;
      const std::size_t cut = field.find_last_of('.');
      field = cut == std::string::npos ? "" : field.substr(0, cut);
    }
    return "";
  }

 private:
  std::string text_, indent_, prefix_, key_prefix_;
  std::map<std::string, std::string> sources_;
};

// A text-format string: quotes and backslashes escaped, control bytes as octal escapes.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\{:03o}", u);
    else
      out += c;
  }
  return out + "\"";
}

// The default name: the file's stem, or its folder's name for a config.json
// (Hugging Face's layout), lower-case, other characters as dashes.
std::string default_name(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  std::string stem = p.stem().string();
  if (stem == "config" && p.has_parent_path() && !p.parent_path().filename().empty())
    stem = p.parent_path().filename().string();
  std::string out;
  for (char c : stem) {
    const auto u = static_cast<unsigned char>(c);
    out += std::isalnum(u) || c == '.' ? static_cast<char>(std::tolower(u)) : '-';
  }
  return out.empty() ? "imported" : out;
}

// What every family shares: sizes, vocabulary, element size, attention biases.
struct Common {
  std::int64_t layers = 0;
  std::int64_t heads = 0;
};

// `dtype_default`: the element size of a family whose released config gives
// none (GPT-OSS ships MXFP4 experts and writes no torch_dtype); empty: required.
// `all_biases`: the family has biases on every linear layer (GPT-OSS:
// attention_bias and the experts' biases), written as linear_bias.
Common write_common(Config& c, ModelText& w, bool mla, const std::string& dtype_default = "",
                    bool all_biases = false, bool qkv_biases = false) {
  Common out;
  out.layers = c.integer("num_hidden_layers");
  // The model format's bound (docs/formats.md: 1,024 blocks), checked before
  // the block rules below walk the blocks.
  if (out.layers > kMaxLayers)
    c.fail("num_hidden_layers", fmt::format("{} is too large: the model format holds at most {} blocks", out.layers,
                                            kMaxLayers));
  w.field("num_layers", out.layers, "num_hidden_layers");
  w.field("d_model", c.integer("hidden_size"), "hidden_size");
  out.heads = c.integer("num_attention_heads");
  w.field("num_heads", out.heads, "num_attention_heads");
  // A missing key means the configuration class's default, which differs by
  // family (MixtralConfig 8, Qwen2MoeConfig 16): it must be written; null
  // means one KV head per query head, as transformers reads it. With MLA
  // every head has its own key and value (checked by the model format).
  if (!mla && !c.written("num_key_value_heads"))
    c.fail("num_key_value_heads", "required: the configuration classes' defaults differ by family (null: as many as "
                                  "num_attention_heads)");
  if (const auto n = c.integer_if("num_key_value_heads")) w.field("num_kv_heads", *n, "num_key_value_heads");
  if (!mla)
    if (const auto k = c.integer_if("head_dim")) w.field("head_dim", *k, "head_dim");
  w.field("vocab_size", c.integer("vocab_size"), "vocab_size");
  // Every family's configuration class defaults to untied embeddings.
  w.field("tie_embeddings", c.boolean_if("tie_word_embeddings").value_or(false) ? "true" : "false",
          "tie_word_embeddings");
  w.field("norm_type", "RMSNORM");
  // The element size: torch_dtype (transformers 4), dtype (transformers 5).
  const std::string dtype_key = c.has("torch_dtype") ? "torch_dtype" : "dtype";
  std::optional<std::string> dtype = c.string_if(dtype_key);
  std::string dtype_source = dtype_key;
  if (!dtype && !dtype_default.empty()) {
    dtype = dtype_default;
    dtype_source = "";  // the family's default, not a key of the file
  }
  if (!dtype) c.fail("torch_dtype", "required: the element size (bfloat16, float16 or float32)");
  if (*dtype == "bfloat16" || *dtype == "float16")
    w.field("dtype_bytes", 2, dtype_source);
  else if (*dtype == "float32")
    w.field("dtype_bytes", 4, dtype_source);
  else
    c.fail(dtype_key, fmt::format("{} is not an element size moeplan plans (bfloat16, float16, float32)",
                                  quoted_for_error(*dtype)));
  if (all_biases) {
    if (!c.boolean_if("attention_bias").value_or(false))
      c.fail("attention_bias", "this family has biases on every linear layer: attention_bias must be true");
    w.field("linear_bias", "true", "attention_bias");
  } else if (qkv_biases && c.boolean_if("attention_bias").value_or(false)) {
    w.field("qkv_bias", "true", "attention_bias");  // the family's attention_bias is Q, K and V's only
  } else if (c.boolean_if("attention_bias").value_or(false))
    c.fail("attention_bias", mla ? "biases on MLA's projections: the model format gives them none"
                                 : "biases on Q, K, V and O: the model format has biases on Q, K, V only (qkv_bias) "
                                   "or on every linear layer (linear_bias)");
  if (c.boolean_if("mlp_bias").value_or(false))
    c.fail("mlp_bias", "biases on the MLP's linear layers without the attention's: the model format cannot say so");
  return out;
}

// Full causal attention is what moeplan prices; a window changes the work.
void refuse_sliding_window(Config& c, const std::string& key) {
  if (const auto window = c.integer_if(key, 0))
    c.fail(key, fmt::format("sliding-window attention over {} tokens is not modelled: moeplan prices full causal "
                            "attention (null means full attention)",
                            *window));
}

// Every block's experts, as Mixtral, OLMoE and Granite MoE write them: the
// count under `experts_key`, top num_experts_per_tok, dropless (each family's
// block computes every routed token), SwiGLU of intermediate_size.
void write_uniform_experts(Config& c, ModelText& w, const char* experts_key) {
  w.open("moe");
  w.field("num_experts", c.integer(experts_key), experts_key);
  w.field("top_k", c.integer("num_experts_per_tok"), "num_experts_per_tok");
  w.field("dropless", "true");
  w.field("expert_type", "SWIGLU");
  w.field("expert_ffn_hidden", c.integer("intermediate_size"), "intermediate_size");
  w.close();
}

void write_mixtral(Config& c, ModelText& w) {
  write_common(c, w, false);
  // MixtralConfig's sliding_window defaults to None: full attention.
  refuse_sliding_window(c, "sliding_window");
  write_uniform_experts(c, w, "num_local_experts");  // MixtralSparseMoeBlock routes without a capacity
}

// OLMoE (modeling_olmoe.py, OlmoeForCausalLM): every block MoE, num_experts
// SwiGLU experts (OlmoeMLP: gate, up, down) of intermediate_size, top
// num_experts_per_tok, no shared expert, a bias-free router; attention with
// RMSNorms over the full Q and K projections (OlmoeAttention.q_norm, k_norm),
// which the model format does not hold (a note). clip_qkv clamps values: no work.
void write_olmoe(Config& c, ModelText& w, std::vector<std::string>& notes) {
  write_common(c, w, false);
  c.find("clip_qkv");
  write_uniform_experts(c, w, "num_experts");  // OlmoeSparseMoeBlock computes every routed token
  notes.push_back("OLMoE's Q and K RMSNorms (hidden_size and the KV width, weights per block) are not in the model "
                  "format and not counted");
}

// Granite MoE (modeling_granitemoe.py, GraniteMoeForCausalLM): every block MoE,
// num_local_experts SwiGLU experts (GraniteMoeParallelExperts: input_linear
// 2 x intermediate_size by hidden, output_linear back) of intermediate_size, top
// num_experts_per_tok, a bias-free router (GraniteMoeTopKGating), no shared
// expert. Its multipliers scale values and change no work.
void write_granitemoe(Config& c, ModelText& w) {
  write_common(c, w, false);
  for (const char* key : {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"})
    c.find(key);
  write_uniform_experts(c, w, "num_local_experts");  // GraniteMoeMoE computes every routed token
}

// Dense decoder families (modeling_llama.py, modeling_mistral.py,
// modeling_qwen2.py, modeling_qwen3.py): every block is attention and one gated
// MLP (gate, up and down projections) of intermediate_size, no experts.
void write_dense(Config& c, ModelText& w, const std::string& type, std::vector<std::string>& notes) {
  write_common(c, w, false);
  if (type == "mistral") {
    // MistralConfig's sliding_window is 4096 in v0.1's config, null from v0.3.
    refuse_sliding_window(c, "sliding_window");
  } else if (type == "qwen2" || type == "qwen3") {
    if (c.boolean_if("use_sliding_window").value_or(false))
      c.fail("use_sliding_window", "sliding-window attention is not modelled: moeplan prices full causal attention");
    c.find("sliding_window");  // read: acts only with use_sliding_window
  }
  // Qwen2Attention: q, k, v projections with bias=True; Qwen3 has none (attention_bias, refused above if set).
  if (type == "qwen2") w.field("qkv_bias", "true");
  if (type == "qwen3")
    notes.push_back("Qwen3's per-head Q and K RMSNorms (2 x head_dim weights per block) are not in the model format "
                    "and not counted");
  w.field("ffn_hidden", c.integer("intermediate_size"), "intermediate_size");
  w.field("ffn_type", "SWIGLU");
}

// Qwen2-MoE and Qwen3-MoE (modeling_qwen2_moe.py, modeling_qwen3_moe.py): block
// i is MoE unless listed in mlp_only_layers, when (i + 1) % decoder_sparse_step == 0.
void write_qwen_moe(Config& c, ModelText& w, bool shared_expert, std::vector<std::string>& notes) {
  const Common common = write_common(c, w, false);
  if (c.boolean_if("use_sliding_window").value_or(false))
    c.fail("use_sliding_window", "sliding-window attention is not modelled: moeplan prices full causal attention");
  c.find("sliding_window");  // read: acts only with use_sliding_window
  if (shared_expert) w.field("qkv_bias", "true");  // Qwen2MoeAttention: q, k, v projections with bias=True
  const std::int64_t step = c.integer_if("decoder_sparse_step").value_or(1);
  const std::vector<std::int64_t> dense_only = c.integers("mlp_only_layers");
  for (std::int64_t layer : dense_only)
    if (layer >= common.layers)
      c.fail("mlp_only_layers", fmt::format("block {} is outside 0..{}", layer, common.layers - 1));
  std::vector<std::int64_t> moe_blocks;
  for (std::int64_t i = 0; i < common.layers; ++i)
    if (std::find(dense_only.begin(), dense_only.end(), i) == dense_only.end() && (i + 1) % step == 0)
      moe_blocks.push_back(i);
  const std::int64_t experts = c.integer("num_experts", 0);
  if (experts == 0 || moe_blocks.empty())
    c.fail(experts == 0 ? "num_experts" : "mlp_only_layers",
           "no block has experts: import-hf reads dense models from their own families (llama, mistral, qwen2, qwen3)");
  if (static_cast<std::int64_t>(moe_blocks.size()) < common.layers) {
    w.field("ffn_hidden", c.integer("intermediate_size"), "intermediate_size");
    w.field("ffn_type", "SWIGLU");
  } else {
    c.find("intermediate_size");  // read: the dense MLP of blocks without experts, of which there are none
  }
  w.open("moe");
  w.field("num_experts", experts, "num_experts");
  w.field("top_k", c.integer("num_experts_per_tok"), "num_experts_per_tok");
  w.field("dropless", "true");  // the transformers block computes every routed token
  w.field("expert_type", "SWIGLU");
  w.field("expert_ffn_hidden", c.integer("moe_intermediate_size"), "moe_intermediate_size");
  if (shared_expert) {
    // Qwen2MoeSparseMoeBlock: one shared SwiGLU expert and its sigmoid gate, d x 1.
    // Required: Qwen2MoeConfig's default (5632) is Qwen1.5-MoE-A2.7B's width.
    const std::int64_t hidden = c.integer("shared_expert_intermediate_size");
    w.field("num_shared_experts", 1);
    w.field("shared_expert_ffn_hidden", hidden, "shared_expert_intermediate_size");
    w.field("shared_expert_gate", "true");
  } else {
    notes.push_back("Qwen3's per-head Q and K RMSNorms (2 x head_dim weights per block) are not in the model format "
                    "and not counted");
  }
  if (static_cast<std::int64_t>(moe_blocks.size()) < common.layers) {
    if (dense_only.empty()) {
      w.field("moe_layer_interval", step, "decoder_sparse_step");
      w.field("moe_layer_offset", step - 1, "decoder_sparse_step");
    } else {
      std::string list;
      for (std::int64_t b : moe_blocks) list += (list.empty() ? "" : ", ") + std::to_string(b);
      w.field("moe_layers", "[" + list + "]", "mlp_only_layers");
    }
  }
  w.close();
}

// GPT-OSS (modeling_gpt_oss.py): every block MoE; attention with biases on
// Q, K, V and O, a learned sink per head, and a sliding window in the blocks
// layer_types marks "sliding_attention"; experts (SwiGLU with biases, clamped)
// of intermediate_size, top experts_per_token, a router with a bias.
void write_gpt_oss(Config& c, ModelText& w, std::vector<std::string>& notes) {
  const Common common = write_common(c, w, false, "bfloat16", true);
  if (!c.has("torch_dtype") && !c.has("dtype"))
    notes.push_back("no torch_dtype in the config (its experts ship in MXFP4): 2-byte elements, BF16 training as "
                    "Megatron-Bridge's GPT-OSS recipes run");
  w.field("attention_sinks", "true");
  const Json* types = c.find("layer_types");
  if (types == nullptr || !types->is_array() || static_cast<std::int64_t>(types->as_array().size()) != common.layers)
    c.fail("layer_types", fmt::format("required: one of sliding_attention or full_attention per block ({})",
                                      common.layers));
  std::string windowed;
  std::int64_t i = 0;
  for (const Json& t : types->as_array()) {
    if (!t.is_string() || (t.as_string() != "sliding_attention" && t.as_string() != "full_attention"))
      c.fail("layer_types", fmt::format("block {}: expected sliding_attention or full_attention", i));
    if (t.as_string() == "sliding_attention") windowed += (windowed.empty() ? "" : ", ") + std::to_string(i);
    ++i;
  }
  if (!windowed.empty()) {
    w.field("sliding_window", c.integer("sliding_window"), "sliding_window");
    w.field("sliding_window_layers", "[" + windowed + "]", "layer_types");
  } else {
    c.find("sliding_window");  // read: no block uses it
  }
  const std::int64_t top_k = c.integer("num_experts_per_tok");
  if (const auto also = c.integer_if("experts_per_token"); also && *also != top_k)
    c.fail("experts_per_token", fmt::format("{} disagrees with num_experts_per_tok {}", *also, top_k));
  notes.push_back("the router's bias (num_local_experts per block) is not counted; linear_bias counts the experts' "
                  "and the attention's");
  w.open("moe");
  w.field("num_experts", c.integer("num_local_experts"), "num_local_experts");
  w.field("top_k", top_k, "num_experts_per_tok");
  w.field("dropless", "true");  // GptOssMLP computes every routed token
  w.field("expert_type", "SWIGLU");
  w.field("expert_ffn_hidden", c.integer("intermediate_size"), "intermediate_size");
  // GptOssExperts clamps the gate half above and the linear half both ways at swiglu_limit.
  if (const auto limit = c.number_if("swiglu_limit")) {
    if (!(*limit > 0 && *limit <= model::kMaxGluClamp))
      c.fail("swiglu_limit", fmt::format("{} is outside (0, {}]", *limit, model::kMaxGluClamp));
    w.field("glu_clamp", fmt::format("{}", *limit), "swiglu_limit");
  }
  w.close();
}

// DeepSeek-V2 and V3 (modeling_deepseek.py): MLA attention; block i is MoE when
// n_routed_experts is set, i >= first_k_dense_replace and i % moe_layer_freq == 0.
// DeepSeek's expert keys, which GLM-4.5 shares: n_routed_experts SwiGLU
// experts of moe_intermediate_size, top num_experts_per_tok, dropless (DeepSeek-V3
// drops no tokens in training, section 3.3 of its report; the transformers
// blocks compute every routed token), the shared experts one MLP of
// n_shared_experts x moe_intermediate_size (DeepseekV2MoE, Glm4MoeMoE), and
// the first first_dense blocks dense.
void write_routed_experts(Config& c, ModelText& w, std::int64_t experts, std::int64_t first_dense) {
  w.field("num_experts", experts, "n_routed_experts");
  w.field("top_k", c.integer("num_experts_per_tok"), "num_experts_per_tok");
  w.field("dropless", "true");
  w.field("expert_type", "SWIGLU");
  const std::int64_t hidden = c.integer("moe_intermediate_size");
  w.field("expert_ffn_hidden", hidden, "moe_intermediate_size");
  if (const std::int64_t shared = c.integer("n_shared_experts", 0); shared > 0) {
    // Each factor within the model format's bound before they are multiplied
    // (2^53 x 2^53 wraps an int64: 3002399751580331 x 6144 gave 2048).
    c.at_most("moe_intermediate_size", hidden, kMaxHidden);
    c.at_most("n_shared_experts", shared, kMaxExperts);
    if (shared * hidden > kMaxHidden)
      c.fail("n_shared_experts", fmt::format("{} shared experts of moe_intermediate_size {} make a shared MLP {} wide, "
                                             "more than the model format's {} (shared_expert_ffn_hidden)",
                                             shared, hidden, shared * hidden, kMaxHidden));
    w.field("num_shared_experts", 1);
    w.field("shared_expert_ffn_hidden", shared * hidden, "n_shared_experts x moe_intermediate_size");
  }
  if (first_dense > 0) w.field("first_k_dense", first_dense, "first_k_dense_replace");
}

// The group-limited routing keys (DeepSeek-V3's node-limited choice), as metadata.
void write_group_routing(Config& c, ModelText& w) {
  if (const auto scale = c.number_if("routed_scaling_factor")) {
    // The released configs give 1.0 (DeepSeek-V2-Lite), 2.5 (DeepSeek-V3,
    // GLM-4.5-Air), 2.827 (Kimi-K2) and 16.0 (DeepSeek-V2): [1e-3, 1e3] is
    // 60x beyond them either way, and a value outside it is no model's.
    constexpr double kMinScale = 1e-3, kMaxScale = 1e3;
    if (!(*scale >= kMinScale && *scale <= kMaxScale))
      c.fail("routed_scaling_factor", fmt::format("{} is outside [{}, {}]: the released configs give 1.0 to 16.0",
                                                  *scale, kMinScale, kMaxScale));
    w.field("routed_scaling_factor", fmt::format("{}", *scale), "routed_scaling_factor");
  }
  if (const auto groups = c.integer_if("n_group")) w.field("num_expert_groups", *groups, "n_group");
  if (const auto chosen = c.integer_if("topk_group")) w.field("topk_groups", *chosen, "topk_group");
}

// Multi-token prediction modules (DeepSeek-V3's, GLM-4.5's; arXiv 2412.19437
// section 2.2): kept as model.mtp_num_layers (priced by the folding family on
// the last stage), or left out when the request drops them; said in a note either way.
void write_mtp(Config& c, ModelText& w, const HfImportOptions& options, std::vector<std::string>& notes) {
  const auto mtp = c.integer_if("num_nextn_predict_layers", 0);
  if (!mtp || *mtp == 0) return;
  if (*mtp < 0) c.fail("num_nextn_predict_layers", "must not be negative");
  if (options.drop_mtp) {
    notes.push_back(fmt::format("dropped ({}): {} multi-token prediction module(s) of num_nextn_predict_layers",
                                option_ref("request.drop_mtp"), *mtp));
    return;
  }
  w.field("mtp_num_layers", *mtp, "num_nextn_predict_layers");
  notes.push_back(fmt::format(
      "kept: {} multi-token prediction module(s) of num_nextn_predict_layers, each a block, a 2d x d projection and "
      "three norms, sharing the embedding and LM head (the checkpoint stores copies of both, which the count "
      "leaves out); {} drops them",
      *mtp, option_ref("request.drop_mtp")));
}

// GLM-4.5 (transformers' Glm4MoeForCausalLM): grouped-query attention with
// Q, K, V biases (attention_bias; o_proj has none), optional per-head Q/K
// norms, the first first_k_dense_replace blocks dense (intermediate_size),
// the others routed SwiGLU experts of moe_intermediate_size with
// n_shared_experts shared ones and a sigmoid router with a score-correction
// bias (Glm4MoeTopkRouter), DeepSeek-V3's group-limited choice (n_group,
// topk_group); partial_rotary_factor rotates part of each head, no work.
void write_glm4_moe(Config& c, ModelText& w, const HfImportOptions& options, std::vector<std::string>& notes) {
  const Common common = write_common(c, w, false, "", false, true);
  write_mtp(c, w, options, notes);
  c.find("partial_rotary_factor");  // read: which part of a head rotates changes no FLOP count of moeplan's
  if (c.boolean_if("use_qk_norm").value_or(false))
    notes.push_back("GLM-4.5's per-head Q and K RMSNorms (2 x head_dim weights per block) are not in the model format "
                    "and not counted");
  const std::int64_t first_dense = c.integer("first_k_dense_replace", 0);
  const std::int64_t experts = c.integer("n_routed_experts");
  if (first_dense >= common.layers)
    c.fail("first_k_dense_replace", "no block has experts: import-hf reads dense models from their own families "
                                    "(llama, mistral, qwen2, qwen3)");
  if (first_dense > 0) {
    w.field("ffn_hidden", c.integer("intermediate_size"), "intermediate_size");
    w.field("ffn_type", "SWIGLU");
  } else {
    c.find("intermediate_size");
  }
  w.open("moe");
  write_routed_experts(c, w, experts, first_dense);
  write_group_routing(c, w);
  w.field("scoring_func", quoted("sigmoid"));  // Glm4MoeTopkRouter: sigmoid scores
  w.close();
  notes.push_back("the router's score-correction bias (n_routed_experts per MoE block) is not counted");
}

void write_deepseek(Config& c, ModelText& w, const HfImportOptions& options, std::vector<std::string>& notes) {
  const Common common = write_common(c, w, true);
  write_mtp(c, w, options, notes);
  // The configuration classes default first_k_dense_replace to 3 (V3) or 0
  // (V2) and q_lora_rank to 1536: the keys must be written (q_lora_rank may be null).
  if (!c.written("q_lora_rank"))
    c.fail("q_lora_rank", "required: the configuration classes default it to 1536 (null: Q projected at full rank)");
  if (!c.written("first_k_dense_replace"))
    c.fail("first_k_dense_replace", "required: DeepseekV3Config defaults it to 3, DeepseekV2Config to 0");
  const std::int64_t first_dense = c.integer("first_k_dense_replace", 0);
  const std::int64_t freq = c.integer_if("moe_layer_freq").value_or(1);
  const std::optional<std::int64_t> experts = c.integer_if("n_routed_experts", 0);
  std::int64_t moe_blocks = 0;
  for (std::int64_t i = first_dense; i < common.layers; ++i)
    if (i % freq == 0) ++moe_blocks;
  if (!experts || *experts == 0 || moe_blocks == 0)
    c.fail(!experts || *experts == 0 ? "n_routed_experts" : "first_k_dense_replace",
           "no block has experts: import-hf reads dense models from their own families (llama, mistral, qwen2, qwen3)");
  if (moe_blocks < common.layers) {
    w.field("ffn_hidden", c.integer("intermediate_size"), "intermediate_size");
    w.field("ffn_type", "SWIGLU");
  } else {
    c.find("intermediate_size");
  }
  w.open("mla");
  if (const auto q = c.integer_if("q_lora_rank")) w.field("q_lora_rank", *q, "q_lora_rank");
  w.field("kv_lora_rank", c.integer("kv_lora_rank"), "kv_lora_rank");
  w.field("qk_nope_head_dim", c.integer("qk_nope_head_dim"), "qk_nope_head_dim");
  w.field("qk_rope_head_dim", c.integer("qk_rope_head_dim"), "qk_rope_head_dim");
  w.field("v_head_dim", c.integer("v_head_dim"), "v_head_dim");
  w.close();
  w.open("moe");
  write_routed_experts(c, w, *experts, first_dense);
  if (freq > 1) w.field("moe_layer_interval", freq, "moe_layer_freq");
  write_group_routing(c, w);
  if (const auto scoring = c.string_if("scoring_func")) w.field("scoring_func", quoted(*scoring), "scoring_func");
  w.close();
}

// The 0-based block ids as a text-format list.
std::string block_list(const std::vector<std::int64_t>& blocks) {
  std::string list;
  for (std::int64_t b : blocks) list += (list.empty() ? "" : ", ") + std::to_string(b);
  return "[" + list + "]";
}

// Llama 4's blocks with chunked attention (configuration_llama4.py): layer_types
// when given, else "chunked_attention" where no_rope_layers is 1 (a RoPE block)
// and "full_attention" where it is 0 (a NoPE block); no_rope_layers defaults to
// 1 except every no_rope_layer_interval-th block (default 4: blocks 3, 7, ...).
// `source`: the key that decided (for the written field's comment).
std::vector<std::int64_t> llama4_chunked_blocks(Config& c, std::int64_t layers, std::string& source) {
  std::vector<std::int64_t> chunked;
  source = "layer_types";
  if (const Json* types = c.find("layer_types")) {
    if (!types->is_array() || static_cast<std::int64_t>(types->as_array().size()) != layers)
      c.fail("layer_types", fmt::format("expected one of chunked_attention or full_attention per block ({})", layers));
    std::int64_t i = 0;
    for (const Json& t : types->as_array()) {
      if (!t.is_string() || (t.as_string() != "chunked_attention" && t.as_string() != "full_attention"))
        c.fail("layer_types", fmt::format("block {}: expected chunked_attention or full_attention", i));
      if (t.as_string() == "chunked_attention") chunked.push_back(i);
      ++i;
    }
    c.find("no_rope_layers");  // read: layer_types, given, decides
    c.find("no_rope_layer_interval");
    return chunked;
  }
  const std::vector<std::int64_t> rope = c.integers("no_rope_layers");
  source = "no_rope_layers";
  if (!rope.empty()) {
    // LlamaTextConfig: "at least the same length as the number of layers".
    if (static_cast<std::int64_t>(rope.size()) < layers)
      c.fail("no_rope_layers", fmt::format("{} entries for {} blocks", rope.size(), layers));
    for (std::int64_t i = 0; i < layers; ++i) {
      if (rope[static_cast<std::size_t>(i)] > 1)
        c.fail("no_rope_layers", fmt::format("block {}: expected 1 (RoPE, chunked) or 0 (NoPE, full)", i));
      if (rope[static_cast<std::size_t>(i)] == 1) chunked.push_back(i);
    }
    c.find("no_rope_layer_interval");  // read: no_rope_layers, given, decides
    return chunked;
  }
  const std::int64_t interval = c.integer_if("no_rope_layer_interval").value_or(4);
  source = "no_rope_layer_interval (default 4: every 4th block NoPE, full attention)";
  for (std::int64_t i = 0; i < layers; ++i)
    if ((i + 1) % interval != 0) chunked.push_back(i);
  return chunked;
}

// Llama 4 (modeling_llama4.py), the text model of Llama4ForConditionalGeneration,
// its keys under text_config: GQA attention, chunked in the RoPE blocks; MoE
// blocks (moe_layers, else every interleave_moe_layer_step-th) of
// num_local_experts routed SwiGLU experts and one shared expert, both
// intermediate_size wide, top-k sigmoid routing; the other blocks a SwiGLU MLP
// of intermediate_size_mlp. The vision encoder is not imported.
void write_llama4(Config& top, ModelText& w, std::vector<std::string>& notes) {
  const Json* text = top.find("text_config");
  if (text == nullptr || !text->is_object())
    top.fail("text_config", "required: the text model's configuration (an object)");
  Config c(top.path(), *text, "text_config.");
  w.set_key_prefix("text_config.");
  if (const auto inner = c.string_if("model_type"); inner && *inner != "llama4_text")
    c.fail("model_type", fmt::format("{} is not llama4_text", quoted_for_error(*inner)));
  // Every Llama 4 checkpoint is multimodal; its published totals count the encoder.
  top.find("vision_config");
  notes.push_back("the text model alone: the vision encoder and its projector (vision_config) are not imported");
  const Common common = write_common(c, w, false);
  // The file's top level repeats two of the text model's keys; they must agree.
  if (const auto dtype = top.string_if("torch_dtype"); dtype && c.has("torch_dtype") &&
                                                        *dtype != *c.string_if("torch_dtype"))
    top.fail("torch_dtype", "disagrees with text_config.torch_dtype");
  if (const auto tied = top.boolean_if("tie_word_embeddings");
      tied && *tied != c.boolean_if("tie_word_embeddings").value_or(false))
    top.fail("tie_word_embeddings", "disagrees with text_config.tie_word_embeddings");
  // Llama4TextL2Norm on the RoPE blocks' queries and keys has no weights.
  c.boolean_if("use_qk_norm");
  std::string chunk_source;
  const std::vector<std::int64_t> chunked = llama4_chunked_blocks(c, common.layers, chunk_source);
  if (!chunked.empty()) {
    const auto chunk = c.integer_if("attention_chunk_size");
    if (!chunk)
      c.fail("attention_chunk_size", "required: blocks with chunked attention are given (null: their chunk size unknown)");
    w.field("attention_chunk_size", *chunk, "attention_chunk_size");
    w.field("attention_chunk_layers", block_list(chunked), chunk_source);
  } else {
    c.find("attention_chunk_size");  // read: no block uses it
  }
  // Llama4TextConfig: moe_layers, else range(step - 1, layers, step).
  const std::int64_t step = c.integer_if("interleave_moe_layer_step").value_or(1);
  const bool listed = c.has("moe_layers");
  std::vector<std::int64_t> moe_blocks = c.integers("moe_layers");
  if (!listed)
    for (std::int64_t i = step - 1; i < common.layers; i += step) moe_blocks.push_back(i);
  for (std::int64_t b : moe_blocks)
    if (b >= common.layers) c.fail("moe_layers", fmt::format("block {} is outside 0..{}", b, common.layers - 1));
  const std::int64_t experts = c.integer("num_local_experts", 0);
  if (experts == 0 || moe_blocks.empty())
    c.fail(experts == 0 ? "num_local_experts" : "moe_layers",
           "no block has experts: import-hf reads dense models from their own families (llama, mistral, qwen2, qwen3)");
  const bool some_dense = static_cast<std::int64_t>(moe_blocks.size()) < common.layers;
  if (some_dense) {
    w.field("ffn_hidden", c.integer("intermediate_size_mlp"), "intermediate_size_mlp");
    w.field("ffn_type", "SWIGLU");
  } else {
    c.find("intermediate_size_mlp");  // read: the dense MLP of blocks without experts, of which there are none
  }
  w.open("moe");
  w.field("num_experts", experts, "num_local_experts");
  w.field("top_k", c.integer("num_experts_per_tok"), "num_experts_per_tok");
  w.field("dropless", "true");  // Llama4TextMoe computes every routed token
  w.field("expert_type", "SWIGLU");
  const std::int64_t hidden = c.integer("intermediate_size");
  w.field("expert_ffn_hidden", hidden, "intermediate_size");
  // Llama4TextMoe: shared_expert = Llama4TextMLP(config), intermediate_size wide, ungated.
  w.field("num_shared_experts", 1);
  w.field("shared_expert_ffn_hidden", hidden, "intermediate_size");
  if (some_dense) {
    if (listed)
      w.field("moe_layers", block_list(moe_blocks), "moe_layers");
    else {
      w.field("moe_layer_interval", step, "interleave_moe_layer_step");
      w.field("moe_layer_offset", step - 1, "interleave_moe_layer_step");
    }
  } else {
    c.find("interleave_moe_layer_step");
  }
  // Llama4Router: a sigmoid of the top-k logits weighs the chosen experts.
  w.field("scoring_func", quoted("sigmoid"));
  w.close();
  w.set_key_prefix("");
  c.check_every_key_read("llama4 (text_config)");
}

}  // namespace

const std::vector<HfIgnoredKey>& hf_ignored_keys() {
  static const std::vector<HfIgnoredKey> keys = make_ignored_keys();
  return keys;
}

const std::vector<std::string>& hf_model_types() { return kModelTypes; }

std::string hf_ignored_keys_markdown() {
  std::string out = "| key | why it changes nothing planned |\n|---|---|\n";
  for (const HfIgnoredKey& k : hf_ignored_keys()) out += fmt::format("| `{}` | {} |\n", k.key, k.why);
  return out;
}

HfImport import_hf_config_text(const std::string& path, const std::string& json, const HfImportOptions& options) {
  const Json root = Json::parse(json, path);
  Config c(path, root);
  if (!root.is_object()) c.fail("", "a config.json holds one JSON object");
  HfImport out;
  const std::optional<std::string> type = c.string_if("model_type");
  if (!type) c.fail("model_type", fmt::format("required: the architecture ({})", fmt::join(kModelTypes, ", ")));
  out.model_type = *type;
  if (const auto refused = kRefusedTypes.find(*type); refused != kRefusedTypes.end())
    c.fail("model_type", fmt::format("{} is refused: {}", quoted_for_error(*type), refused->second));
  if (std::find(kModelTypes.begin(), kModelTypes.end(), *type) == kModelTypes.end())
    c.fail("model_type", fmt::format("{} is not a family import-hf reads ({})", quoted_for_error(*type),
                                     fmt::join(kModelTypes, ", ")));
  const std::string name = options.name.empty() ? default_name(path) : options.name;
  ModelText w;
  w.field("name", quoted(name));
  w.field("description", quoted(fmt::format("imported from a Hugging Face config.json (model_type {})", *type)));
  if (kDenseTypes.count(*type))
    write_dense(c, w, *type, out.notes);
  else if (*type == "mixtral")
    write_mixtral(c, w);
  else if (*type == "qwen2_moe" || *type == "qwen3_moe")
    write_qwen_moe(c, w, *type == "qwen2_moe", out.notes);
  else if (*type == "gpt_oss")
    write_gpt_oss(c, w, out.notes);
  else if (*type == "llama4")
    write_llama4(c, w, out.notes);
  else if (*type == "glm4_moe")
    write_glm4_moe(c, w, options, out.notes);
  else if (*type == "olmoe")
    write_olmoe(c, w, out.notes);
  else if (*type == "granitemoe")
    write_granitemoe(c, w);
  else  // deepseek_v2, deepseek_v3 and kimi_k2 (Kimi-K2: DeepseekV3ForCausalLM's architecture, its own model_type)
    write_deepseek(c, w, options, out.notes);
  c.check_every_key_read(*type);
  std::string header = "# proto-message: Model\n";
  header += fmt::format("# Imported by `moeplan import-hf` from {} (model_type {}); each field's\n",
                        std::filesystem::path(path).filename().string(), *type);
  header += "# comment names the config key it came from (none: fixed by the architecture).\n";
  for (const std::string& note : out.notes) header += "# Note: " + note + ".\n";
  out.text = header + w.text();
  try {
    out.model = load_model_text(path, out.text);
  } catch (const Error& e) {
    // The model format refused a value: name the config key it came from.
    const std::string key = w.source_of(e.field());
    throw Error(ErrorKind::Input,
                key.empty() ? e.field() + ": " + e.reason() : fmt::format("{} (model field {})", e.reason(), e.field()),
                key, SourceLocation{path, 0, 0});
  }
  return out;
}

HfImport import_hf_config(const std::string& path, const HfImportOptions& options) {
  return import_hf_config_text(path, read_text_file(path), options);
}

}  // namespace moeplan::io
