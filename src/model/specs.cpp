#include <moeplan/model/specs.hpp>

#include <algorithm>
#include <array>
#include <utility>

namespace moeplan::model {

std::int64_t ModelSpec::num_moe_layers() const {
  return static_cast<std::int64_t>(std::count(moe_layer.begin(), moe_layer.end(), true));
}

std::int64_t ModelSpec::num_window_layers() const {
  return static_cast<std::int64_t>(std::count(window_layer.begin(), window_layer.end(), true));
}

std::int64_t ModelSpec::num_chunk_layers() const {
  return static_cast<std::int64_t>(std::count(chunk_layer.begin(), chunk_layer.end(), true));
}

namespace {
// One table per enum so that names are spelled once (CLI.md spellings).
constexpr std::array<std::pair<OpClass, const char*>, 9> kOpNames{{
    {OpClass::Gemm, "gemm"},
    {OpClass::Attention, "attention"},
    {OpClass::A2A, "a2a"},
    {OpClass::AllGather, "allgather"},
    {OpClass::ReduceScatter, "reducescatter"},
    {OpClass::AllReduce, "allreduce"},
    {OpClass::P2P, "p2p"},
    {OpClass::GemmFp8, "gemm_fp8"},
    {OpClass::Elementwise, "elementwise"},
}};
constexpr std::array<std::pair<LinkClass, const char*>, 3> kLinkNames{{
    {LinkClass::Local, "local"},
    {LinkClass::Intra, "intra"},
    {LinkClass::Inter, "inter"},
}};
// Megatron-LM's --fp8-recipe spellings, prefixed fp8_ (mxfp8 already says it).
constexpr std::array<std::pair<Precision, const char*>, 5> kPrecisionNames{{
    {Precision::Bf16, "bf16"},
    {Precision::Fp8Delayed, "fp8_delayed"},
    {Precision::Fp8Tensorwise, "fp8_tensorwise"},
    {Precision::Fp8Blockwise, "fp8_blockwise"},
    {Precision::Mxfp8, "mxfp8"},
}};
constexpr std::array<std::pair<Routing, const char*>, 3> kRoutingNames{{
    {Routing::Balanced, "balanced"},
    {Routing::Zipf, "zipf"},
    {Routing::Histogram, "histogram"},
}};

template <typename Enum, std::size_t N>
const char* name_of(const std::array<std::pair<Enum, const char*>, N>& table, Enum value) {
  for (const auto& [e, name] : table)
    if (e == value) return name;
  return "?";
}

template <typename Enum, std::size_t N>
std::optional<Enum> parse_name(const std::array<std::pair<Enum, const char*>, N>& table, const std::string& text) {
  for (const auto& [e, name] : table)
    if (text == name) return e;
  return std::nullopt;
}
}  // namespace

const char* to_string(OpClass op) { return name_of(kOpNames, op); }
const char* to_string(LinkClass link) { return name_of(kLinkNames, link); }
const char* to_string(Provenance provenance) {
  switch (provenance) {
    case Provenance::Measured:
      return "measured";
    case Provenance::Paper:
      return "paper";
    case Provenance::Datasheet:
      return "datasheet";
  }
  return "?";
}
const char* to_string(Routing routing) { return name_of(kRoutingNames, routing); }
const char* to_string(Precision precision) { return name_of(kPrecisionNames, precision); }
std::optional<Precision> precision_from_string(const std::string& text) { return parse_name(kPrecisionNames, text); }
bool is_compute_op(OpClass op) {
  return op == OpClass::Gemm || op == OpClass::Attention || op == OpClass::GemmFp8 || op == OpClass::Elementwise;
}
std::optional<Routing> routing_from_string(const std::string& text) { return parse_name(kRoutingNames, text); }
std::optional<OpClass> op_class_from_string(const std::string& text) { return parse_name(kOpNames, text); }
std::optional<LinkClass> link_class_from_string(const std::string& text) { return parse_name(kLinkNames, text); }

}  // namespace moeplan::model
