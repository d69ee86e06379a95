// Chakra trace -> task graph (docs/formats.md, "Chakra execution traces").
// Each file is one rank. A collective is matched across its group's files the
// way NCCL matches them on a communicator: the k-th collective of a rank on
// pg_name G is the k-th of every member of G. A send and a receive match on
// (source, destination, tag), in order. Tasks are issued in one order that
// keeps every file's node order: the lowest node id of any file that can go
// next, a collective once all its members have reached it.

#include <algorithm>
#include <functional>
#include <map>
#include <queue>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/interop/chakra.hpp>
#include <moeplan/io/json.hpp>

#include "chakra_attributes.hpp"
#include "chakra_parse.hpp"

namespace moeplan::interop {
namespace {

using dag::TaskId;
using detail::node_label;
using detail::NodeKind;
using detail::ParsedFile;
using detail::ParsedNode;

constexpr std::size_t kNone = static_cast<std::size_t>(-1);
constexpr TaskId kNoTask = static_cast<TaskId>(-1);
constexpr double kMsPerMicro = 1e-3;

Error located(const std::string& path, const std::string& why) {
  return Error(ErrorKind::Input, why, "", SourceLocation{path, 0, 0});
}

// Chakra's CollectiveCommType values (et_def.proto) that the cost model prices.
std::optional<model::OpClass> collective_op(std::int64_t comm_type) {
  switch (comm_type) {
    case ChakraProtoMsg::ALL_REDUCE:
      return model::OpClass::AllReduce;
    case ChakraProtoMsg::ALL_GATHER:
      return model::OpClass::AllGather;
    case ChakraProtoMsg::ALL_TO_ALL:
      return model::OpClass::A2A;
    case ChakraProtoMsg::REDUCE_SCATTER:
      return model::OpClass::ReduceScatter;
    default:
      return std::nullopt;
  }
}

struct NodeRef {
  std::size_t file = 0;
  std::size_t node = 0;
};

// One collective: its group's ranks and, per member, its node.
struct Collective {
  std::string pg;
  std::vector<std::int32_t> members;
  std::vector<NodeRef> nodes;  // by member rank
  std::size_t arrived = 0;
};

class Importer {
 public:
  Importer(const ChakraInput& in, const model::ClusterSpec& cluster, const cost::CostModel& costs, CommPricing comm)
      : in_(in), cluster_(cluster), costs_(costs), comm_(comm) {
    builder_.set_limit(sched::graph_limit(model::RunLimits{}));
  }

  ChakraImport run() {
    detail::count_chakra_nodes(in_.files);  // every file's, before any is read
    detail::ImportCounts counts;
    for (const ChakraFile& f : in_.files) files_.push_back(detail::parse_chakra_file(f, counts));
    out_.ranks = static_cast<std::int32_t>(files_.size());
    for (std::int32_t rank = 0; rank < out_.ranks; ++rank) all_ranks_.push_back(rank);
    check_cluster();
    for (const ParsedFile& f : files_) {
      if (!f.representative) continue;
      out_.representative = true;
      if (comm_ == CommPricing::Model)
        throw located(f.path,
                      fmt::format("is a representative trace (a file stands for more ranks than itself: symmetric "
                                  "mode, or one file per pipeline stage), so its collectives' groups are not in it and "
                                  "the cost model cannot price them; import it with {} trace (a scenario of a "
                                  "layer-schedule family exports every rank with schedule.mode=multi_rank)",
                                  option_ref("request.comm")));
    }
    read_groups();
    task_of_.resize(files_.size());
    for (std::size_t f = 0; f < files_.size(); ++f) task_of_[f].assign(files_[f].nodes.size(), kNoTask);
    match_collectives();
    match_transfers();
    issue();
    add_dependencies();
    try {
      out_.built.graph = std::move(builder_).build();
    } catch (const Error& e) {
      // Each file was checked alone: this cycle runs through an in-order
      // stream's issue order or across files (collectives, transfers).
      throw Error(e.kind(),
                  e.reason() +
                      " (its dependencies with each in-order stream's issue order and the collectives and "
                      "transfers that join the files)",
                  "", SourceLocation{in_.directory, 0, 0});
    }
    out_.built.schedule = "chakra";
    out_.built.overlap_compute_slowdown = costs_.overlap_compute_slowdown();
    out_.built.overlap_comm_slowdown = costs_.overlap_comm_slowdown();
    return std::move(out_);
  }

 private:
  void check_cluster() const {
    const std::int64_t world = cluster_.world_size();
    if (static_cast<std::int64_t>(files_.size()) > world)
      throw located(in_.directory, fmt::format("holds the files of {} ranks, but cluster {} has {} GPUs", files_.size(),
                                               cluster_.name, world));
  }

  // ASTRA-sim's --comm-group-configuration: {"pg_name": [rank, ...], ...}.
  void read_groups() {
    if (!in_.comm_groups_json) return;
    const std::string& path = in_.comm_groups_path;
    const io::Json j = io::Json::parse(*in_.comm_groups_json, path);
    if (!j.is_object()) throw located(path, "must be a JSON object {\"pg_name\": [ranks], ...}");
    if (j.as_object().size() > kMaxChakraGroups)
      throw located(path, fmt::format("holds {} groups, more than {}, the limit of one import", j.as_object().size(),
                                      kMaxChakraGroups));
    for (const auto& entry : j.as_object()) {
      const std::string& name = entry.first;
      const io::Json& value = entry.second;
      auto bad = [&](const std::string& why) {
        return located(path, fmt::format("group {}: {}", quoted_for_error(name), why));
      };
      if (!value.is_array() || value.as_array().empty()) throw bad("must be a non-empty array of ranks");
      std::vector<std::int32_t> members;
      for (const io::Json& r : value.as_array()) {
        const double x = r.is_number() ? r.as_number() : -1;
        if (!(x >= 0 && x == static_cast<double>(static_cast<std::int64_t>(x))))
          throw bad("ranks must be non-negative integers");
        if (x >= static_cast<double>(files_.size()))
          throw bad(fmt::format("rank {} has no file in {} (ranks 0..{})", x, in_.directory, files_.size() - 1));
        members.push_back(static_cast<std::int32_t>(x));
      }
      std::sort(members.begin(), members.end());
      if (std::adjacent_find(members.begin(), members.end()) != members.end()) throw bad("lists a rank twice");
      groups_[name] = std::move(members);
    }
  }

  [[noreturn]] void fail(const NodeRef& r, const std::string& why) const {
    const ParsedFile& f = files_[r.file];
    throw located(f.path, node_label(f.nodes[r.node]) + ": " + why);
  }

  const ParsedNode& node(const NodeRef& r) const { return files_[r.file].nodes[r.node]; }

  // The ranks of pg_name: "" and "0" are every rank (ASTRA-sim's default group).
  // A reference: a copy per node would cost each collective its group's size squared.
  const std::vector<std::int32_t>& members_of(const NodeRef& r) const {
    const std::string& pg = node(r).pg_name;
    if (pg.empty() || pg == "0") return all_ranks_;
    const auto it = groups_.find(pg);
    if (it == groups_.end())
      fail(r, fmt::format("pg_name {} is not a group of {}", quoted_for_error(pg),
                          in_.comm_groups_json ? in_.comm_groups_path : in_.comm_groups_path + " (there is none)"));
    return it->second;
  }

  void match_collectives() {
    std::map<std::pair<std::string, std::size_t>, std::size_t> by_key;  // (pg, k) -> collective
    std::map<std::pair<std::string, std::size_t>, std::size_t> count;   // (pg, file) -> collectives seen
    coll_of_.resize(files_.size());
    for (std::size_t f = 0; f < files_.size(); ++f) {
      coll_of_[f].assign(files_[f].nodes.size(), kNone);
      for (std::size_t i = 0; i < files_[f].nodes.size(); ++i) {
        if (files_[f].nodes[i].kind != NodeKind::Collective) continue;
        const NodeRef r{f, i};
        const std::string& written = node(r).pg_name;
        const std::string pg = written == "0" ? "" : written;
        const std::vector<std::int32_t>& members = members_of(r);
        const auto rank = static_cast<std::int32_t>(f);
        if (!std::binary_search(members.begin(), members.end(), rank))
          fail(r, fmt::format("runs on pg_name {}, whose ranks do not include this file's rank {}",
                              quoted_for_error(pg), rank));
        const std::size_t k = count[{pg, f}]++;
        auto [it, added] = by_key.try_emplace({pg, k}, collectives_.size());
        if (added) collectives_.push_back({pg, members, {}, 0});
        collectives_[it->second].nodes.push_back(r);
        coll_of_[f][i] = it->second;
      }
    }
    for (const Collective& c : collectives_) {
      const NodeRef& first = c.nodes.front();
      if (c.nodes.size() != c.members.size()) {
        std::int32_t missing = 0;
        for (std::int32_t m : c.members)
          if (std::none_of(c.nodes.begin(), c.nodes.end(),
                           [&](const NodeRef& r) { return r.file == static_cast<std::size_t>(m); })) {
            missing = m;
            break;
          }
        fail(first, fmt::format("its collective on pg_name {} has no counterpart in {}, which holds {} collectives "
                                "on that group (members match the k-th collective of a group with the k-th)",
                                quoted_for_error(c.pg), files_[static_cast<std::size_t>(missing)].path,
                                count[{c.pg, static_cast<std::size_t>(missing)}]));
      }
      for (const NodeRef& r : c.nodes)
        if (node(r).comm_type != node(first).comm_type || node(r).comm_bytes != node(first).comm_bytes)
          fail(r, fmt::format("is the same collective as {} of {} (k-th on pg_name {}), but their comm_type or "
                              "comm_size differ (comm_type {} and {}, comm_size {} and {})",
                              node_label(node(first)), files_[first.file].path, quoted_for_error(c.pg),
                              *node(r).comm_type, *node(first).comm_type, node(r).comm_bytes, node(first).comm_bytes));
    }
  }

  void match_transfers() {
    using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // source, destination, tag
    std::map<Key, std::vector<NodeRef>> sends, recvs;
    const auto ranks = static_cast<std::int64_t>(files_.size());
    for (std::size_t f = 0; f < files_.size(); ++f)
      for (std::size_t i = 0; i < files_[f].nodes.size(); ++i) {
        const NodeRef r{f, i};
        const ParsedNode& n = node(r);
        if (n.kind != NodeKind::Send && n.kind != NodeKind::Recv) continue;
        const auto own = static_cast<std::int64_t>(f);
        const bool send = n.kind == NodeKind::Send;
        const std::int64_t src = send ? n.comm_src.value_or(own) : *n.comm_src;
        const std::int64_t dst = send ? *n.comm_dst : n.comm_dst.value_or(own);
        if ((send ? src : dst) != own)
          fail(r, fmt::format("its {} is rank {}, but it is in the file of rank {}", send ? "comm_src" : "comm_dst",
                              send ? src : dst, own));
        const std::int64_t peer = send ? dst : src;
        if (peer >= ranks || peer == own)
          fail(r, fmt::format("its {} {} is not another rank of the trace (ranks 0..{})",
                              send ? "comm_dst" : "comm_src", peer, ranks - 1));
        (send ? sends : recvs)[{src, dst, n.comm_tag.value_or(0)}].push_back(r);
      }
    partner_.resize(files_.size());
    for (std::size_t f = 0; f < files_.size(); ++f) partner_[f].assign(files_[f].nodes.size(), NodeRef{kNone, kNone});
    auto unmatched = [&](const NodeRef& r, const Key& k, bool send) {
      const auto& [src, dst, tag] = k;
      fail(r, fmt::format("has no matching {} in {} (source {}, destination {}, tag {}; they match in order)",
                          send ? "COMM_RECV_NODE" : "COMM_SEND_NODE",
                          files_[static_cast<std::size_t>(send ? dst : src)].path, src, dst, tag));
    };
    for (const auto& [key, list] : sends) {
      const auto it = recvs.find(key);
      const std::size_t paired = it == recvs.end() ? 0 : it->second.size();
      if (list.size() > paired) unmatched(list[paired], key, true);
      for (std::size_t k = 0; k < list.size(); ++k) {
        const NodeRef s = list[k], r = it->second[k];
        if (node(s).comm_bytes != node(r).comm_bytes)
          fail(r, fmt::format("receives {} bytes, but its send {} of {} sends {}", node(r).comm_bytes,
                              node_label(node(s)), files_[s.file].path, node(s).comm_bytes));
        partner_[s.file][s.node] = r;
        partner_[r.file][r.node] = s;
      }
    }
    for (const auto& [key, list] : recvs) {
      const auto it = sends.find(key);
      const std::size_t paired = it == sends.end() ? 0 : it->second.size();
      if (list.size() > paired) unmatched(list[paired], key, false);
    }
  }

  // The stream a node runs on: a moeplan trace's table, a `stream` attribute
  // (a CUDA stream: in order), else one pool per kind and rank taking the
  // lowest ready node id first (ASTRA-sim's issue rule). A receive without a
  // stream holds none: its transfer runs on the sender's.
  std::optional<dag::ResourceId> resource_of(const NodeRef& r) {
    const ParsedFile& f = files_[r.file];
    const ParsedNode& n = node(r);
    std::string name;
    dag::DispatchPolicy policy = dag::DispatchPolicy::Priority;
    if (n.stream && f.moeplan) {
      name = f.streams[static_cast<std::size_t>(*n.stream)].name;
      policy = f.streams[static_cast<std::size_t>(*n.stream)].policy;
    } else if (n.stream) {
      name = fmt::format("stream {}", *n.stream);
      policy = dag::DispatchPolicy::InOrder;
    } else if (n.kind == NodeKind::Recv) {
      return std::nullopt;
    } else if (f.moeplan) {
      fail(r, "has no stream attribute, which every node of a moeplan trace but a receive carries");
    } else {
      name = n.cpu ? "cpu" : n.kind == NodeKind::Compute ? "compute" : "comm";
    }
    const auto key = std::pair{f.rank, name};
    auto it = resources_.find(key);
    if (it == resources_.end()) {
      it = resources_.emplace(key, builder_.add_resource({name, f.rank, policy})).first;
      policies_.push_back(policy);  // resource ids run 0, 1, ... in the order they are added
      last_on_.push_back(kNoTask);
    }
    return it->second;
  }

  double trace_ms(const ParsedNode& n) const {
    if (n.duration_ms) return *n.duration_ms;
    return static_cast<double>(n.duration_micros) * kMsPerMicro;
  }

  double compute_ms(const NodeRef& r) const {
    const ParsedNode& n = node(r);
    if (n.duration_ms || n.duration_micros > 0) return trace_ms(n);
    // No time in the trace: its operation count on the profile's line.
    if (n.num_ops > 0) return costs_.compute(n.op, n.num_ops).value;
    return 0.0;
  }

  cost::GroupShape shape_of(std::vector<std::int32_t> ranks) const {
    return cost::group_shape(std::vector<std::int64_t>(ranks.begin(), ranks.end()), cluster_);
  }

  // Issue order: every file's nodes in order; a collective when all its members reach it.
  void issue() {
    using Head = std::pair<std::uint64_t, std::size_t>;  // (node id, file)
    std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
    std::vector<std::size_t> at(files_.size(), 0);
    auto advance = [&](std::size_t f) {
      if (++at[f] < files_[f].nodes.size()) heads.push({files_[f].nodes[at[f]].id, f});
    };
    for (std::size_t f = 0; f < files_.size(); ++f)
      if (!files_[f].nodes.empty()) heads.push({files_[f].nodes.front().id, f});
    while (!heads.empty()) {
      const std::size_t f = heads.top().second;
      heads.pop();
      const NodeRef r{f, at[f]};
      switch (node(r).kind) {
        case NodeKind::Compute:
          add_compute(r);
          advance(f);
          break;
        case NodeKind::Send:
          add_transfer(r);
          advance(f);
          break;
        case NodeKind::Recv:
        case NodeKind::PassThrough:
          advance(f);
          break;
        case NodeKind::Collective: {
          Collective& c = collectives_[coll_of_[f][r.node]];
          if (++c.arrived < c.members.size()) break;  // waits, off the heap, for its other members
          add_collective(c);
          for (const NodeRef& m : c.nodes) advance(m.file);
          break;
        }
      }
    }
    for (std::size_t f = 0; f < files_.size(); ++f)
      if (at[f] < files_[f].nodes.size()) report_crossed(at);
  }

  // Every file left waits at a collective for a member that waits elsewhere.
  [[noreturn]] void report_crossed(const std::vector<std::size_t>& at) const {
    for (std::size_t f = 0; f < files_.size(); ++f) {
      if (at[f] >= files_[f].nodes.size()) continue;
      const NodeRef r{f, at[f]};
      const Collective& c = collectives_[coll_of_[f][r.node]];
      for (const NodeRef& m : c.nodes)
        if (at[m.file] != m.node) {
          const NodeRef other{m.file, at[m.file]};
          fail(r, fmt::format("waits for rank {} to reach it, but that rank waits first at {} of {}: the ranks issue "
                              "their collectives in different orders (a deadlock)",
                              m.file, node_label(node(other)), files_[m.file].path));
        }
    }
    MOEPLAN_CHECK(false, "a file stopped short of its end waits at a collective");
  }

  TaskId add(const dag::TaskSpec& spec, const std::vector<dag::ResourceId>& resources) {
    const TaskId t = builder_.add_task(spec);
    for (dag::ResourceId res : resources) {
      if (policies_[res] == dag::DispatchPolicy::InOrder && last_on_[res] != kNoTask)
        edges_.emplace_back(last_on_[res], t);  // an in-order stream: after the task issued before it
      last_on_[res] = t;
    }
    return t;
  }

  dag::TaskSpec spec_of(const ParsedNode& n, dag::TaskKind kind, model::OpClass op) const {
    dag::TaskSpec s;
    s.name = n.name;
    s.kind = kind;
    s.op = op;
    s.phase = n.phase;
    s.layer = n.layer;
    s.micro_batch = n.micro_batch;
    s.priority = n.priority;
    return s;
  }

  std::vector<dag::ResourceId> resources_for(const std::vector<NodeRef>& refs) {
    std::vector<dag::ResourceId> out;
    for (const NodeRef& r : refs)
      if (auto res = resource_of(r)) out.push_back(*res);
    return out;
  }

  void add_compute(const NodeRef& r) {
    const ParsedNode& n = node(r);
    if (!model::is_compute_op(n.op))
      fail(r, fmt::format("a COMP_NODE of moeplan_op {} (compute is gemm, attention, gemm_fp8 or elementwise)",
                          model::to_string(n.op)));
    dag::TaskSpec s = spec_of(n, dag::TaskKind::Compute, n.op);
    s.size = n.num_ops;
    s.duration_ms = compute_ms(r);
    s.resources = resources_for({r});
    task_of_[r.file][r.node] = add(s, s.resources);
    ++out_.compute_tasks;
  }

  void add_collective(const Collective& c) {
    const NodeRef& first = c.nodes.front();
    const ParsedNode& n = node(first);
    const std::optional<model::OpClass> op = collective_op(*n.comm_type);
    if (!op)
      fail(first, fmt::format("comm_type {} is not a collective moeplan simulates (ALL_REDUCE 0, ALL_GATHER 2, "
                              "ALL_TO_ALL 6, REDUCE_SCATTER 7)",
                              *n.comm_type));
    dag::TaskSpec s = spec_of(n, dag::TaskKind::Communication, *op);
    s.size = n.comm_bytes;
    s.group_size = static_cast<std::int32_t>(n.group_size.value_or(static_cast<std::int64_t>(c.members.size())));
    if (comm_ == CommPricing::Model) {
      if (n.group_size && *n.group_size != static_cast<std::int64_t>(c.members.size()))
        fail(first, fmt::format("was priced for {} ranks, but pg_name {} has {}; import it with {} trace",
                                *n.group_size, quoted_for_error(c.pg), c.members.size(), option_ref("request.comm")));
      s.duration_ms = costs_.communication(*op, shape_of(c.members), n.comm_bytes).value;
      ++out_.priced_by_model;
    } else {
      // Each member's own time; the collective ends with its slowest member.
      for (const NodeRef& m : c.nodes) s.duration_ms = std::max(s.duration_ms, trace_ms(node(m)));
    }
    s.resources = resources_for(c.nodes);
    const TaskId t = add(s, s.resources);
    for (const NodeRef& m : c.nodes) task_of_[m.file][m.node] = t;
    ++out_.collectives;
  }

  void add_transfer(const NodeRef& send) {
    const NodeRef recv = partner_[send.file][send.node];
    const ParsedNode& n = node(send);
    dag::TaskSpec s = spec_of(n, dag::TaskKind::Communication, model::OpClass::P2P);
    s.size = n.comm_bytes;
    s.group_size = 2;
    if (comm_ == CommPricing::Model) {
      const auto src = static_cast<std::int32_t>(send.file), dst = static_cast<std::int32_t>(recv.file);
      s.duration_ms = costs_.communication(model::OpClass::P2P, shape_of({src, dst}), n.comm_bytes).value;
      ++out_.priced_by_model;
    } else {
      s.duration_ms = trace_ms(n);
    }
    s.resources = resources_for({send, recv});
    const TaskId t = add(s, s.resources);
    task_of_[send.file][send.node] = t;
    task_of_[recv.file][recv.node] = t;
    ++out_.transfers;
  }

  void add_dependencies() {
    for (std::size_t f = 0; f < files_.size(); ++f)
      for (std::size_t i = 0; i < files_[f].nodes.size(); ++i) {
        const TaskId t = task_of_[f][i];
        if (t == kNoTask) continue;
        for (std::size_t d : files_[f].deps[i])
          if (task_of_[f][d] != t) edges_.emplace_back(task_of_[f][d], t);
      }
    std::sort(edges_.begin(), edges_.end());
    edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());
    for (const auto& [before, after] : edges_) builder_.add_dependency(before, after);
  }

  const ChakraInput& in_;
  const model::ClusterSpec& cluster_;
  const cost::CostModel& costs_;
  CommPricing comm_;
  std::vector<ParsedFile> files_;
  std::map<std::string, std::vector<std::int32_t>> groups_;
  std::vector<std::int32_t> all_ranks_;  // 0..n-1: the default group
  std::vector<Collective> collectives_;
  std::vector<std::vector<std::size_t>> coll_of_;  // per file and node: its collective, else kNone
  std::vector<std::vector<NodeRef>> partner_;      // per file and node: the other end of a transfer
  std::vector<std::vector<TaskId>> task_of_;       // per file and node: its task, else kNoTask
  std::map<std::pair<std::int32_t, std::string>, dag::ResourceId> resources_;
  std::vector<dag::DispatchPolicy> policies_;
  std::vector<TaskId> last_on_;
  std::vector<std::pair<TaskId, TaskId>> edges_;
  dag::TaskGraphBuilder builder_;
  ChakraImport out_;
};

}  // namespace

ChakraImport import_chakra(const ChakraInput& input, const model::ClusterSpec& cluster, const cost::CostModel& costs,
                           CommPricing comm) {
  return Importer(input, cluster, costs, comm).run();
}

}  // namespace moeplan::interop
