#include <moeplan/model/pipeline_layout.hpp>

#include <cctype>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::model {
namespace {

// A recursive-descent expansion of the layout grammar:
//   seq  := item*;  item := ( '(' seq ')' | symbol ) [ '*' count ];  symbol := E | t | L | m | '|'
class LayoutExpander {
 public:
  LayoutExpander(const std::string& text, const std::string& field) : text_(text), field_(field) {}

  std::string expand() {
    std::string out = sequence();
    if (pos_ < text_.size()) fail(fmt::format("unexpected '{}' at character {}", text_[pos_], pos_ + 1));
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw_input_error(field_, why); }

  void skip_blanks() {
    while (pos_ < text_.size() && (text_[pos_] == ',' || std::isspace(static_cast<unsigned char>(text_[pos_]))))
      ++pos_;
  }

  std::string sequence() {
    std::string out;
    for (skip_blanks(); pos_ < text_.size() && text_[pos_] != ')'; skip_blanks()) {
      std::string item;
      const char c = text_[pos_];
      if (c == '(') {
        ++pos_;
        item = sequence();
        if (pos_ >= text_.size() || text_[pos_] != ')') fail("a '(' is not closed");
        ++pos_;
      } else if (c == 'E' || c == 't' || c == 'L' || c == 'm' || c == '|') {
        item = std::string(1, c);
        ++pos_;
      } else {
        fail(fmt::format("'{}' at character {} is not a layout symbol (E, t, L, m, |, (, ), *N)", c, pos_ + 1));
      }
      skip_blanks();
      std::int64_t repeat = 1;
      if (pos_ < text_.size() && text_[pos_] == '*') {
        ++pos_;
        skip_blanks();
        const std::size_t start = pos_;
        repeat = 0;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
          repeat = repeat * 10 + (text_[pos_] - '0');
          if (repeat > kMaxLayoutSymbols) fail(fmt::format("a repeat count above {}", kMaxLayoutSymbols));
          ++pos_;
        }
        if (pos_ == start || repeat < 1) fail("'*' needs a repeat count of at least 1");
      }
      if (static_cast<std::int64_t>(out.size() + item.size() * static_cast<std::size_t>(repeat)) > kMaxLayoutSymbols)
        fail(fmt::format("the layout expands to more than {} symbols", kMaxLayoutSymbols));
      for (std::int64_t i = 0; i < repeat; ++i) out += item;
    }
    return out;
  }

  const std::string& text_;
  const std::string& field_;
  std::size_t pos_ = 0;
};

}  // namespace

PipelineLayout read_pipeline_layout(const std::string& text, const std::string& field) {
  if (text.size() > kMaxLayoutChars)
    throw_input_error(field, fmt::format("{} characters: at most {}", text.size(), kMaxLayoutChars));
  const std::string flat = LayoutExpander(text, field).expand();
  PipelineLayout out;
  std::vector<std::int64_t>& stages = out.stage_layers;
  stages.push_back(0);
  for (std::size_t i = 0; i < flat.size(); ++i) {
    switch (flat[i]) {
      case '|':
        if (out.mtp_blocks > 0)
          throw_input_error(field, "'m' (a multi-token-prediction block) must be on the last stage, which moeplan "
                                   "prices them on");
        stages.push_back(0);
        break;
      case 't':
        if (out.mtp_blocks > 0)
          throw_input_error(field, "'m' (a multi-token-prediction block) must follow every transformer block 't'");
        ++stages.back();
        break;
      case 'E':
        if (stages.size() != 1 || stages.back() != 0 || i != 0)
          throw_input_error(field, "'E' (the embedding) must open the first stage");
        break;
      case 'L':
        if (i + 1 != flat.size()) throw_input_error(field, "'L' (the loss and LM head) must close the last stage");
        break;
      case 'm':
        ++out.mtp_blocks;
        break;
      default:
        break;
    }
  }
  return out;
}

std::vector<std::int64_t> parse_pipeline_layout(const std::string& text, const std::string& field) {
  return read_pipeline_layout(text, field).stage_layers;
}

std::string pipeline_layout_text(const std::vector<std::int64_t>& stage_layers, std::int64_t mtp_blocks) {
  std::string out;
  for (std::size_t i = 0; i < stage_layers.size(); ++i) {
    if (i > 0) out += '|';
    if (i == 0) out += 'E';
    const std::int64_t n = stage_layers[i];
    if (n == 1) out += 't';
    if (n > 1) out += fmt::format("t*{}", n);
    if (i + 1 == stage_layers.size()) {
      if (mtp_blocks == 1) out += 'm';
      if (mtp_blocks > 1) out += fmt::format("m*{}", mtp_blocks);
      out += 'L';
    }
  }
  return out;
}

std::vector<std::int64_t> uneven_pipeline_layout(std::int64_t layers, std::int64_t stages) {
  if (stages < 1 || layers < 1 || layers % stages == 0) return {};
  const std::int64_t per = (layers + stages - 1) / stages;
  std::int64_t deficit = per * stages - layers;  // 1 .. stages - 1
  if (per < 2) return {};
  std::vector<std::int64_t> out(static_cast<std::size_t>(stages), per);
  // From the ends inwards: last, first, second last, second, ...
  for (std::int64_t k = 0; deficit > 0; ++k, --deficit) {
    const std::int64_t stage = k % 2 == 0 ? stages - 1 - k / 2 : k / 2;
    --out[static_cast<std::size_t>(stage)];
  }
  return out;
}

}  // namespace moeplan::model
