#pragma once
// Pipeline layouts as Megatron-LM writes them (--pipeline-model-parallel-layout,
// docs/formats.md "Pipeline layouts"): the virtual pipeline stages in model
// order, separated by '|', each a string of 't' (a transformer block), 'E'
// (the embedding: first stage only), 'm' (a multi-token-prediction block:
// last stage only, after its transformer blocks) and 'L' (the loss and LM
// head: last stage only); "X*N" repeats a symbol and "(...)*N" a group. Stage i runs on pipeline
// rank i % pp as its model chunk i / pp. Megatron's other uneven splits
// (--decoder-first/last-pipeline-num-layers, --account-for-embedding/loss-in-
// pipeline-split) are layouts too, which is how moeplan takes them.

#include <cstdint>
#include <string>
#include <vector>

namespace moeplan::model {

/// Longest layout text read (a 1,024-stage pipeline of 100-layer stages is far below it).
inline constexpr std::size_t kMaxLayoutChars = 4096;
/// Most symbols a layout expands to.
inline constexpr std::int64_t kMaxLayoutSymbols = 1 << 20;

/// @brief A layout read: its transformer blocks per virtual stage and its MTP blocks.
struct PipelineLayout {
  std::vector<std::int64_t> stage_layers;  ///< transformer blocks per virtual stage, in model order
  std::int64_t mtp_blocks = 0;             ///< 'm' symbols: multi-token-prediction blocks on the last stage
};

/// Reads a layout. Input error (field `field`) naming the reason for: an
/// unknown symbol, an unbalanced parenthesis, a repeat count outside
/// 1..kMaxLayoutSymbols, 'E' anywhere but the start of the first stage, 'L'
/// anywhere but the end of the last, an 'm' outside the last stage or before
/// one of its transformer blocks (Megatron places MTP blocks after every
/// decoder block; moeplan prices them on the last stage, so a standalone MTP
/// stage is refused too), and text longer than kMaxLayoutChars. ',' and
/// spaces are ignored.
PipelineLayout read_pipeline_layout(const std::string& text, const std::string& field);

/// Transformer blocks per virtual stage (read_pipeline_layout's stage_layers).
std::vector<std::int64_t> parse_pipeline_layout(const std::string& text, const std::string& field);

/// The layout text of stage block counts: "Et*4|t*4|...|tL" (E on the first
/// stage, L on the last, "t*k" for k > 1 blocks, "" for none), with
/// `mtp_blocks` 'm's before the L ("m*k" for k > 1).
std::string pipeline_layout_text(const std::vector<std::int64_t>& stage_layers, std::int64_t mtp_blocks = 0);

/// Megatron's uneven split of `layers` blocks over `stages` virtual stages when
/// they do not divide: every stage gets ceil(layers / stages) but the deficit is
/// taken one block at a time from the last stage, the first, the second last,
/// the second, ... (the stages that also hold the LM head and the embedding):
/// a deficit of 2 is --account-for-embedding-in-pipeline-split with
/// --account-for-loss-in-pipeline-split, 1 is the loss alone. Empty when they
/// divide (the even split) or when a stage would be left with no block.
std::vector<std::int64_t> uneven_pipeline_layout(std::int64_t layers, std::int64_t stages);

}  // namespace moeplan::model
