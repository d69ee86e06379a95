#pragma once
// Hugging Face config.json -> a moeplan model file (`moeplan import-hf`), for
// the MoE families people plan: Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V2,
// DeepSeek-V3, Kimi-K2, GLM-4.5, GPT-OSS and Llama 4 (its text model), and dense Llama,
// Mistral, Qwen2 and Qwen3; families whose attention moeplan cannot price
// (Qwen3-Next's Gated DeltaNet, ...) are refused by name. Every key of the config is read into the model, checked and
// refused when the model format cannot express its value, or listed as
// irrelevant to planning (hf_ignored_keys, printed in docs/formats.md); any
// other key is an input error naming it. Nothing is dropped silently: what the
// format leaves out by design is said in `notes` and in the file's comments.

#include <string>
#include <vector>

#include <moeplan/model/specs.hpp>

namespace moeplan::io {

/// @brief Choices of an import that the config cannot make.
struct HfImportOptions {
  std::string name;       ///< the model's name; empty: the file's stem (its folder's name for config.json)
  bool drop_mtp = false;  ///< import DeepSeek-V3's main model without its multi-token prediction modules
};

/// @brief An imported model: the text written and what it loads as.
struct HfImport {
  std::string model_type;          ///< the config's model_type
  std::string text;                ///< the model in text format: header, provenance comments, fields
  model::ModelSpec model;          ///< `text` loaded and validated
  std::vector<std::string> notes;  ///< what the model format leaves out by design, one sentence each
};

/// Reads a config.json; input errors are "FILE: key: reason".
HfImport import_hf_config(const std::string& path, const HfImportOptions& options = {});
/// The same from text already read (`path` names it in errors and the default name).
HfImport import_hf_config_text(const std::string& path, const std::string& json, const HfImportOptions& options = {});

/// @brief A config key that changes nothing moeplan plans, and why.
struct HfIgnoredKey {
  std::string key;
  std::string why;
};

/// Keys every family ignores, in the order docs/formats.md lists them.
const std::vector<HfIgnoredKey>& hf_ignored_keys();

/// The model_type values import-hf reads.
const std::vector<std::string>& hf_model_types();

/// The ignored keys as the Markdown table docs/formats.md prints.
std::string hf_ignored_keys_markdown();

}  // namespace moeplan::io
