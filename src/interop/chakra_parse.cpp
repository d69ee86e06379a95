// One Chakra trace file -> ParsedFile (chakra_parse.hpp). Attribute values
// are read from whichever integer member of AttributeProto's oneof holds
// them: Chakra's own writers disagree (its generator writes comm_size as
// uint64_val, its PyTorch converter as int64_val, ASTRA-sim reads int64_val).

#include "chakra_parse.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

#include "chakra_attributes.hpp"

namespace moeplan::interop::detail {
namespace {

using ChakraProtoMsg::AttributeProto;

// Bounds that keep every sum of a trace's times and sizes finite: one
// operation of a day (a training step is seconds; folding's longest pipeline
// chunk in the bundled scenarios is under 2 s), and model::kMaxSampleSize
// FLOPs or bytes (an exabyte; 17 minutes of an H100's peak).
constexpr double kMaxNodeMs = 8.64e7;
constexpr std::uint64_t kMaxNodeMicros = 86'400'000'000;
constexpr auto kMaxSize = static_cast<std::int64_t>(model::kMaxSampleSize);

Error file_error(const std::string& path, const std::string& why) {
  return Error(ErrorKind::Input, why, "", SourceLocation{path, 0, 0});
}

// A message whose unknown fields carry numbers the schema gives its own
// fields was written as another message (protobuf keeps a field of the wrong
// wire type as unknown instead of failing). Higher numbers are fields of a
// newer Chakra schema (Node.storage = 11) and are let through.
std::optional<int> misread_field(const google::protobuf::Message& m, int last_known_field) {
  const google::protobuf::UnknownFieldSet& unknown = m.GetReflection()->GetUnknownFields(m);
  for (int i = 0; i < unknown.field_count(); ++i)
    if (unknown.field(i).number() <= last_known_field) return unknown.field(i).number();
  return std::nullopt;
}

const char* value_type(const AttributeProto& a) {
  if (a.value_case() == AttributeProto::VALUE_NOT_SET) return "no value";
  const auto* field = AttributeProto::descriptor()->FindFieldByNumber(static_cast<int>(a.value_case()));
  return field != nullptr ? field->name().c_str() : "?";
}

std::optional<std::int64_t> integer_of(const AttributeProto& a) {
  switch (a.value_case()) {
    case AttributeProto::kInt32Val:
      return a.int32_val();
    case AttributeProto::kInt64Val:
      return a.int64_val();
    case AttributeProto::kUint32Val:
      return a.uint32_val();
    case AttributeProto::kUint64Val:
      if (a.uint64_val() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
      return static_cast<std::int64_t>(a.uint64_val());
    case AttributeProto::kSint32Val:
      return a.sint32_val();
    case AttributeProto::kSint64Val:
      return a.sint64_val();
    case AttributeProto::kFixed32Val:
      return a.fixed32_val();
    case AttributeProto::kFixed64Val:
      if (a.fixed64_val() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
      return static_cast<std::int64_t>(a.fixed64_val());
    case AttributeProto::kSfixed32Val:
      return a.sfixed32_val();
    case AttributeProto::kSfixed64Val:
      return a.sfixed64_val();
    default:
      return std::nullopt;
  }
}

class NodeReader {
 public:
  NodeReader(const std::string& path, ParsedNode& node) : path_(path), n_(node) {}

  [[noreturn]] void fail(const std::string& why) const { throw file_error(path_, node_label(n_) + ": " + why); }

  void read(const ChakraProtoMsg::Node& m) {
    n_.id = m.id();
    n_.name = m.name();
    n_.kind = kind_of(static_cast<int>(m.type()));
    n_.duration_micros = m.duration_micros();
    if (n_.duration_micros > kMaxNodeMicros)
      fail(fmt::format("duration_micros {} is more than a day ({})", n_.duration_micros, kMaxNodeMicros));
    n_.deps.assign(m.data_deps().begin(), m.data_deps().end());
    n_.deps.insert(n_.deps.end(), m.ctrl_deps().begin(), m.ctrl_deps().end());
    std::sort(n_.deps.begin(), n_.deps.end());
    n_.deps.erase(std::unique(n_.deps.begin(), n_.deps.end()), n_.deps.end());
    bool has_size = false;
    for (const AttributeProto& a : m.attr()) has_size = read_attribute(a) || has_size;
    check_required(has_size);
  }

 private:
  NodeKind kind_of(int type) const {
    switch (type) {
      case ChakraProtoMsg::COMP_NODE:
        return NodeKind::Compute;
      case ChakraProtoMsg::COMM_COLL_NODE:
        return NodeKind::Collective;
      case ChakraProtoMsg::COMM_SEND_NODE:
        return NodeKind::Send;
      case ChakraProtoMsg::COMM_RECV_NODE:
        return NodeKind::Recv;
      case ChakraProtoMsg::METADATA_NODE:
      case ChakraProtoMsg::INVALID_NODE:
        return NodeKind::PassThrough;
      default:
        break;
    }
    if (ChakraProtoMsg::NodeType_IsValid(type))
      fail(
          fmt::format("node type {} ({}) is not one moeplan simulates: it has no memory or storage model "
                      "(COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE and COMM_RECV_NODE run; METADATA_NODE and "
                      "INVALID_NODE pass their dependencies on)",
                      ChakraProtoMsg::NodeType_Name(type), type));
    fail(fmt::format("unknown node type {} (Chakra's NodeType runs 0..10)", type));
  }

  std::int64_t integer(const AttributeProto& a, std::int64_t low, std::int64_t high) const {
    const std::optional<std::int64_t> v = integer_of(a);
    if (!v) fail(fmt::format("attribute {}: expected an integer, got {}", a.name(), value_type(a)));
    if (*v < low || *v > high) fail(fmt::format("attribute {}: {} is out of range [{}, {}]", a.name(), *v, low, high));
    return *v;
  }

  double number(const AttributeProto& a, double high) const {
    double v = 0;
    if (a.value_case() == AttributeProto::kDoubleVal)
      v = a.double_val();
    else if (auto i = integer_of(a))
      v = static_cast<double>(*i);
    else
      fail(fmt::format("attribute {}: expected a number, got {}", a.name(), value_type(a)));
    if (!(v >= 0 && v <= high)) fail(fmt::format("attribute {}: {} is out of range [0, {}]", a.name(), v, high));
    return v;
  }

  std::string text(const AttributeProto& a) const {
    if (a.value_case() == AttributeProto::kStringVal) return a.string_val();
    if (auto i = integer_of(a)) return std::to_string(*i);
    fail(fmt::format("attribute {}: expected a string, got {}", a.name(), value_type(a)));
  }

  // Returns whether this was comm_size (or moeplan_comm_bytes).
  bool read_attribute(const AttributeProto& a) {
    constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
    constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
    const std::string& name = a.name();
    if (name == attr::kIsCpuOp) {
      if (a.value_case() != AttributeProto::kBoolVal)
        fail(fmt::format("attribute is_cpu_op: expected bool_val, got {}", value_type(a)));
      n_.cpu = a.bool_val();
    } else if (name == attr::kNumOps) {
      n_.num_ops = number(a, model::kMaxSampleSize);
    } else if (name == attr::kCommType) {
      n_.comm_type = integer(a, 0, kInt32Max);
    } else if (name == attr::kCommSize) {
      if (!n_.comm_bytes_exact) n_.comm_bytes = static_cast<double>(integer(a, 0, kMaxSize));
      return true;
    } else if (name == attr::kCommBytes) {
      n_.comm_bytes = number(a, model::kMaxSampleSize);
      n_.comm_bytes_exact = true;
      return true;
    } else if (name == attr::kCommSrc) {
      n_.comm_src = integer(a, 0, kInt32Max);
    } else if (name == attr::kCommDst) {
      n_.comm_dst = integer(a, 0, kInt32Max);
    } else if (name == attr::kCommTag) {
      n_.comm_tag = integer(a, std::numeric_limits<std::int32_t>::min(), kInt64Max);
    } else if (name == attr::kCommPriority) {
      n_.priority = static_cast<std::int32_t>(integer(a, std::numeric_limits<std::int32_t>::min(), kInt32Max));
    } else if (name == attr::kPgName) {
      n_.pg_name = text(a);
    } else if (name == attr::kStream) {
      n_.stream = integer(a, 0, kInt64Max);
    } else if (name == attr::kDurationMs) {
      n_.duration_ms = number(a, kMaxNodeMs);
    } else if (name == attr::kGroupSize) {
      n_.group_size = integer(a, 1, kInt32Max);
    } else if (name == attr::kOp) {
      const auto op = model::op_class_from_string(text(a));
      if (!op) fail(fmt::format("attribute {}: unknown operation {}", name, quoted_for_error(text(a))));
      n_.op = *op;
    } else if (name == attr::kPhase) {
      const std::string phase = text(a);
      if (phase != "forward" && phase != "backward" && phase != "none")
        fail(fmt::format("attribute {}: {} is not forward, backward or none", name, quoted_for_error(phase)));
      n_.phase = phase == "forward"    ? dag::Phase::Forward
                 : phase == "backward" ? dag::Phase::Backward
                                       : dag::Phase::None;
    } else if (name == attr::kLayer) {
      n_.layer = static_cast<std::int32_t>(integer(a, -1, kInt32Max));
    } else if (name == attr::kMicroBatch) {
      n_.micro_batch = static_cast<std::int32_t>(integer(a, -1, kInt32Max));
    }
    // Any other attribute (rf_id, tid, op_schema, ...) says nothing moeplan simulates.
    return false;
  }

  void check_required(bool has_size) const {
    switch (n_.kind) {
      case NodeKind::Collective:
        if (!n_.comm_type) fail("a COMM_COLL_NODE needs a comm_type attribute");
        if (!has_size) fail("a COMM_COLL_NODE needs a comm_size attribute");
        break;
      case NodeKind::Send:
        if (!n_.comm_dst) fail("a COMM_SEND_NODE needs a comm_dst attribute");
        if (!has_size) fail("a COMM_SEND_NODE needs a comm_size attribute");
        break;
      case NodeKind::Recv:
        if (!n_.comm_src) fail("a COMM_RECV_NODE needs a comm_src attribute");
        if (!has_size) fail("a COMM_RECV_NODE needs a comm_size attribute");
        break;
      default:
        break;
    }
  }

  const std::string& path_;
  ParsedNode& n_;
};

dag::DispatchPolicy policy_of(const std::string& path, const std::string& entry) {
  const std::size_t colon = entry.rfind(':');
  const std::string policy = colon == std::string::npos ? "" : entry.substr(colon + 1);
  if (policy == "in_order") return dag::DispatchPolicy::InOrder;
  if (policy == "priority") return dag::DispatchPolicy::Priority;
  throw file_error(path, fmt::format("GlobalMetadata: {} entry {} is not NAME:in_order or NAME:priority",
                                     attr::kStreams, quoted_for_error(entry)));
}

void read_metadata(const ChakraFile& f, const DelimitedMessage& message, ParsedFile& out) {
  ChakraProtoMsg::GlobalMetadata meta;
  const bool parsed = meta.ParseFromArray(message.bytes.data(), static_cast<int>(message.bytes.size()));
  if (!parsed || misread_field(meta, 2))
    throw file_error(f.path, fmt::format("message 1 at byte {}: not a ChakraProtoMsg.GlobalMetadata (a Chakra trace "
                                         "starts with one)",
                                         message.offset));
  bool astra_sim_sizes = false;
  for (const AttributeProto& a : meta.attr()) {
    if (a.name() == attr::kStreams) {
      if (a.value_case() != AttributeProto::kStringList)
        throw file_error(f.path, fmt::format("GlobalMetadata: {} must be a string_list", attr::kStreams));
      out.moeplan = true;
      for (const std::string& entry : a.string_list().values())
        out.streams.push_back({entry.substr(0, entry.rfind(':')), policy_of(f.path, entry)});
    } else if (a.name() == attr::kCommSizeConvention) {
      astra_sim_sizes = a.value_case() == AttributeProto::kStringVal && a.string_val() == attr::kAstraSimConvention;
    } else if (a.name() == attr::kRepresentative) {
      out.representative = a.value_case() == AttributeProto::kBoolVal && a.bool_val();
    } else if (a.name() == attr::kRank) {
      const std::optional<std::int64_t> rank = integer_of(a);
      if (rank && *rank != f.rank)
        throw file_error(f.path, fmt::format("GlobalMetadata: written for rank {}, found as the file of rank {} (a "
                                             "renamed file?)",
                                             *rank, f.rank));
    }
  }
  out.nccl_tests_comm_size = out.moeplan && !astra_sim_sizes;
}

// Kahn's algorithm over one file's nodes: a node left over lies on a cycle
// or waits for one. Returns the nodes in an order where dependencies come first.
std::vector<std::size_t> topological_order(const ParsedFile& file,
                                           const std::vector<std::vector<std::size_t>>& direct) {
  const std::size_t n = file.nodes.size();
  std::vector<std::size_t> waiting(n, 0);
  std::vector<std::vector<std::size_t>> successors(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t d : direct[i]) {
      ++waiting[i];
      successors[d].push_back(i);
    }
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < n; ++i)
    if (waiting[i] == 0) order.push_back(i);
  for (std::size_t k = 0; k < order.size(); ++k)
    for (std::size_t s : successors[order[k]])
      if (--waiting[s] == 0) order.push_back(s);
  if (order.size() == n) return order;
  // A node on the cycle itself: walk back from any blocked node through blocked dependencies.
  std::size_t at = 0;
  while (waiting[at] == 0) ++at;
  std::vector<bool> seen(n, false);
  while (!seen[at]) {
    seen[at] = true;
    for (std::size_t d : direct[at])
      if (waiting[d] != 0) {
        at = d;
        break;
      }
  }
  throw file_error(file.path, node_label(file.nodes[at]) +
                                  ": lies on a dependency cycle (a node waits, through its "
                                  "dependencies, for itself)");
}

// The messages of a file, its framing checked, none held.
std::size_t count_messages(const ChakraFile& f) {
  std::size_t messages = 0;
  for (DelimitedReader reader(f.bytes, f.path); reader.next();) ++messages;
  return messages;
}

// Dependencies on METADATA and INVALID nodes become dependencies on what those
// wait for. In dependency order, each such node's set of real nodes is made
// once from its dependencies' sets, and one that waits for a single such node
// shares that node's set: a chain of n of them with m dependents costs about
// n + m steps, where walking the chain from each dependent cost n x m. Every
// dependency taken, through a set or directly, counts against
// kMaxChakraDependencies before it is taken, which bounds both the steps and
// the sets held.
void resolve_dependencies(ParsedFile& out, const std::vector<std::vector<std::size_t>>& direct, ImportCounts& counts) {
  const std::size_t n = out.nodes.size();
  constexpr std::size_t kUnseen = static_cast<std::size_t>(-1);
  std::vector<std::size_t> owner(n, kUnseen);     // a pass-through node: the node whose set it shares
  std::vector<std::vector<std::size_t>> via(n);   // per owner: the real nodes it waits for
  std::vector<std::size_t> taken_by(n, kUnseen);  // per real node: the last node whose list took it
  out.deps.resize(n);
  const auto passes = [&](std::size_t i) { return out.nodes[i].kind == NodeKind::PassThrough; };
  for (std::size_t i : topological_order(out, direct)) {
    if (passes(i) && direct[i].size() == 1 && passes(direct[i].front())) {
      owner[i] = owner[direct[i].front()];
      continue;
    }
    owner[i] = i;
    std::vector<std::size_t> resolved;
    for (std::size_t d : direct[i]) {
      const std::vector<std::size_t>* set = passes(d) ? &via[owner[d]] : nullptr;
      const std::size_t taken = set != nullptr ? set->size() : 1;
      if (taken > kMaxChakraDependencies - counts.resolved_dependencies)
        throw file_error(out.path, fmt::format("{}: brings the dependencies of the trace's files, once METADATA and "
                                               "INVALID nodes are passed through (a node that waits for one waits for "
                                               "all it waits for), to more than {}, the limit of one import",
                                               node_label(out.nodes[i]), kMaxChakraDependencies));
      counts.resolved_dependencies += taken;
      for (std::size_t k = 0; k < taken; ++k) {
        const std::size_t real = set != nullptr ? (*set)[k] : d;
        if (taken_by[real] == i) continue;
        taken_by[real] = i;
        resolved.push_back(real);
      }
    }
    std::sort(resolved.begin(), resolved.end());
    (passes(i) ? via[i] : out.deps[i]) = std::move(resolved);
  }
}

}  // namespace

std::string node_label(const ParsedNode& node) {
  return fmt::format("node {} ({})", node.id, quoted_for_error(node.name));
}

std::size_t count_chakra_nodes(const std::vector<ChakraFile>& files) {
  std::size_t total = 0;
  for (const ChakraFile& f : files) {
    const std::size_t nodes = count_messages(f);
    if (nodes > 0 && nodes - 1 > kMaxChakraNodes - total)
      throw file_error(
          f.path, fmt::format("holds {} nodes{}, more than {}, the limit of one import (all its files "
                              "together)",
                              nodes - 1, total == 0 ? std::string() : fmt::format(" and the files before it {}", total),
                              kMaxChakraNodes));
    total += nodes > 0 ? nodes - 1 : 0;
  }
  return total;
}

ParsedFile parse_chakra_file(const ChakraFile& f, ImportCounts& counts) {
  ParsedFile out;
  out.path = f.path;
  out.rank = f.rank;
  const std::size_t messages = count_messages(f);  // so that the nodes are allocated once
  if (messages == 0) throw file_error(f.path, "is empty; a Chakra trace starts with a GlobalMetadata message");
  out.nodes.reserve(messages - 1);
  DelimitedReader reader(f.bytes, f.path);
  read_metadata(f, *reader.next(), out);
  for (std::size_t i = 1; i < messages; ++i) {
    const DelimitedMessage message = *reader.next();
    ChakraProtoMsg::Node m;
    const bool parsed = m.ParseFromArray(message.bytes.data(), static_cast<int>(message.bytes.size()));
    if (const auto field = parsed ? misread_field(m, 10) : std::nullopt; !parsed || field)
      throw file_error(f.path, fmt::format("message {} at byte {}: not a ChakraProtoMsg.Node{}", i + 1, message.offset,
                                           field ? fmt::format(" (its field {} has another wire type than Node's; a "
                                                               "second GlobalMetadata?)",
                                                               *field)
                                                 : ""));
    ParsedNode node;
    node.message = i + 1;
    const auto written = static_cast<std::size_t>(m.data_deps_size()) + static_cast<std::size_t>(m.ctrl_deps_size());
    if (written > kMaxChakraDependencies - counts.dependencies)
      throw file_error(f.path, fmt::format("message {} at byte {}: node {} brings the dependencies (data_deps and "
                                           "ctrl_deps) of the trace's files to more than {}, the limit of one import",
                                           i + 1, message.offset, m.id(), kMaxChakraDependencies));
    counts.dependencies += written;
    NodeReader(f.path, node).read(m);
    out.nodes.push_back(std::move(node));
  }
  // Issue order is node id order (Chakra's writers emit nodes by id; ASTRA-sim issues the lowest ready id first).
  std::stable_sort(out.nodes.begin(), out.nodes.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  std::unordered_map<std::uint64_t, std::size_t> index;
  index.reserve(out.nodes.size());
  for (std::size_t i = 0; i < out.nodes.size(); ++i)
    if (!index.emplace(out.nodes[i].id, i).second)
      throw file_error(f.path, fmt::format("node id {} is used twice (messages {} and {})", out.nodes[i].id,
                                           out.nodes[i - 1].message, out.nodes[i].message));
  std::vector<std::vector<std::size_t>> direct(out.nodes.size());
  for (std::size_t i = 0; i < out.nodes.size(); ++i) {
    const ParsedNode& node = out.nodes[i];
    if (node.stream && out.moeplan && static_cast<std::size_t>(*node.stream) >= out.streams.size())
      throw file_error(f.path, fmt::format("{}: stream {} is not in the GlobalMetadata's {} streams", node_label(node),
                                           *node.stream, out.streams.size()));
    direct[i].reserve(node.deps.size());
    for (std::uint64_t d : node.deps) {
      const auto it = index.find(d);
      if (it == index.end())
        throw file_error(f.path,
                         fmt::format("{}: depends on node {}, which the file does not hold", node_label(node), d));
      direct[i].push_back(it->second);
    }
  }
  resolve_dependencies(out, direct, counts);
  return out;
}

}  // namespace moeplan::interop::detail
