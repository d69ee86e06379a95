// Chakra trace -> task graph (docs/formats.md, "Chakra execution traces").
// Each file is one rank. A collective is matched across its group's files the
// way NCCL matches them on a communicator: the k-th collective of a rank on
// pg_name G is the k-th of every member of G. A send and a receive match on
// (source, destination, tag, size), in order, as ASTRA-sim's network front
// end matches them. Tasks are issued in one order that keeps every file's
// node order: the lowest node id of any file that can go next, a collective
// once all its members have reached it.
//
// Sends and receives run as ASTRA-sim runs them (518bd51: Workload.cc
// issue_send_comm / issue_recv_comm; CommonNetworkApi.cc
// process_chunk_arrival and sim_recv): a send starts when its dependencies
// are done and ends when its message arrives, whether or not the receive is
// posted; a receive ends at max(arrival, the time it is posted). So a send is
// a task on the sender's stream, and a receive is no task at all: what waits
// for it waits for its send and for everything the receive itself waits for
// (and, on an in-order stream, for the work before it there; the work after
// it there waits for it). A receive does no work, so a task for it would need
// a resource it does not use (the graph refuses a task on none), and it would
// add a task per transfer to moeplan's own round trips, whose graphs have
// none; a join written as edges gives the same times.

#include <algorithm>
#include <functional>
#include <limits>
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

// Chakra's CollectiveCommType values (et_def.proto) that moeplan runs, and the
// operation each task is labelled and priced as. A BARRIER is an allreduce:
// PyTorch's ProcessGroupNCCL::barrier allreduces a one-element tensor
// (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, "All reduce to achieve
// the barrier"); a BROADCAST is priced on the all-gather line
// (CostModel::broadcast).
std::optional<model::OpClass> collective_op(std::int64_t comm_type) {
  switch (comm_type) {
    case ChakraProtoMsg::ALL_REDUCE:
    case ChakraProtoMsg::BARRIER:
      return model::OpClass::AllReduce;
    case ChakraProtoMsg::ALL_GATHER:
    case ChakraProtoMsg::BROADCAST:
      return model::OpClass::AllGather;
    case ChakraProtoMsg::ALL_TO_ALL:
      return model::OpClass::A2A;
    case ChakraProtoMsg::REDUCE_SCATTER:
      return model::OpClass::ReduceScatter;
    default:
      return std::nullopt;
  }
}

// The size the cost model prices (nccl-tests' `size`: an all-gather's output,
// a reduce-scatter's input, an allreduce's and an alltoall's buffer).
// moeplan_comm_bytes is written in that convention. comm_size is in
// ASTRA-sim's, which reads an ALL_GATHER's as each rank's input (518bd51
// Ring.cc lines 75-77: final_data_size = data_size * nodes_in_ring) and the
// others' as nccl-tests does (lines 71-74, 79-86). A file moeplan wrote
// before issue 29 (its moeplan_streams table without moeplan_comm_size
// "astra-sim") has an all-gather's nccl-tests size in comm_size.
double priced_bytes(const detail::ParsedNode& n, std::size_t members, bool nccl_tests_comm_size) {
  if (n.comm_bytes_exact || nccl_tests_comm_size || *n.comm_type != ChakraProtoMsg::ALL_GATHER) return n.comm_bytes;
  return n.comm_bytes * static_cast<double>(members);
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

// A stream of one rank: a resource once a task runs on it.
struct Stream {
  std::int32_t rank = 0;
  std::string name;
  dag::DispatchPolicy policy = dag::DispatchPolicy::Priority;
  std::optional<dag::ResourceId> id;
  TaskId last_task = kNoTask;
  std::size_t pending_receive = kNone;  // a receive after last_task: the next task waits for it
};

// A receive: a join, no task (see the top of the file).
struct Receive {
  NodeRef node;
  NodeRef send;
  TaskId stream_task = kNoTask;        // the task before it on its in-order stream
  std::size_t stream_receive = kNone;  // the receive before it there, after stream_task
  std::vector<TaskId> waits;           // what waits for it waits for these
  enum class State : std::uint8_t { Unseen, Open, Done } state = State::Unseen;
};

class Importer {
 public:
  Importer(const ChakraInput& in, const model::ClusterSpec& cluster, const cost::CostModel& costs, CommPricing comm)
      : in_(in), cluster_(cluster), costs_(costs), comm_(comm) {
    builder_.set_limit(sched::graph_limit(model::RunLimits{}));
  }

  ChakraImport run() {
    detail::count_chakra_nodes(in_.files);  // every file's, before any is read
    for (const ChakraFile& f : in_.files) files_.push_back(detail::parse_chakra_file(f, counts_));
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
    resolve_receives();
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

  // ASTRA-sim matches a message on (tag, source, destination, size), in
  // order (CommonNetworkApi.cc: callback_tracker.search_entry(tag, src, dst,
  // count, chunk_id)), and reads comm_tag as a uint32 (Workload.cc lines 403
  // and 429: comm_tag<uint32_t>): tags are compared on their low 32 bits.
  void match_transfers() {
    using Key = std::tuple<std::int64_t, std::int64_t, std::uint32_t, double>;  // source, destination, tag, bytes
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
        const auto tag = static_cast<std::uint32_t>(n.comm_tag.value_or(0));
        (send ? sends : recvs)[{src, dst, tag, n.comm_bytes}].push_back(r);
      }
    partner_.resize(files_.size());
    receive_of_.resize(files_.size());
    for (std::size_t f = 0; f < files_.size(); ++f) {
      partner_[f].assign(files_[f].nodes.size(), NodeRef{kNone, kNone});
      receive_of_[f].assign(files_[f].nodes.size(), kNone);
    }
    auto unmatched = [&](const NodeRef& r, const Key& k, bool send) {
      const auto& [src, dst, tag, bytes] = k;
      fail(r, fmt::format("has no matching {} in {} (source {}, destination {}, tag {}, {} bytes; they match in order)",
                          send ? "COMM_RECV_NODE" : "COMM_SEND_NODE",
                          files_[static_cast<std::size_t>(send ? dst : src)].path, src, dst, tag, bytes));
    };
    for (const auto& [key, list] : sends) {
      const auto it = recvs.find(key);
      const std::size_t paired = it == recvs.end() ? 0 : it->second.size();
      if (list.size() > paired) unmatched(list[paired], key, true);
      for (std::size_t k = 0; k < list.size(); ++k) {
        const NodeRef s = list[k], r = it->second[k];
        partner_[s.file][s.node] = r;
        receive_of_[r.file][r.node] = receives_.size();
        Receive& receive = receives_.emplace_back();
        receive.node = r;
        receive.send = s;
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
  // stream has none.
  Stream* stream_of(const NodeRef& r) {
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
      return nullptr;
    } else if (f.moeplan) {
      fail(r, "has no stream attribute, which every node of a moeplan trace but a receive carries");
    } else {
      name = n.cpu ? "cpu" : n.kind == NodeKind::Compute ? "compute" : "comm";
    }
    auto [it, added] = streams_.try_emplace({f.rank, name});
    if (added) {
      it->second.rank = f.rank;
      it->second.name = name;
      it->second.policy = policy;
    }
    return &it->second;
  }

  // The resource of a task's node: its stream, made a resource when its first task comes
  // (a stream of receives alone runs no task, so the graph has no lane for it).
  dag::ResourceId resource_of(const NodeRef& r) {
    Stream* s = stream_of(r);
    MOEPLAN_CHECK(s != nullptr, "every node but a receive has a stream");
    if (!s->id) {
      s->id = builder_.add_resource({s->name, s->rank, s->policy});
      by_resource_.push_back(s);  // resource ids run 0, 1, ... in the order they are added
    }
    return *s->id;
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
          place_receive(r);
          advance(f);
          break;
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
      Stream& s = *by_resource_[res];
      if (s.policy == dag::DispatchPolicy::InOrder) {
        // An in-order stream: after the task issued before it, and after a receive issued since.
        if (s.last_task != kNoTask) edges_.emplace_back(s.last_task, t);
        if (s.pending_receive != kNone) after_receive_.emplace_back(s.pending_receive, t);
        s.pending_receive = kNone;
      }
      s.last_task = t;
    }
    return t;
  }

  // A receive on an in-order stream keeps its place there: it ends after the
  // stream's work before it, and the stream's next task starts after it. On a
  // pool, or without a stream, it holds nothing.
  void place_receive(const NodeRef& r) {
    Stream* s = stream_of(r);
    if (s == nullptr || s->policy != dag::DispatchPolicy::InOrder) return;
    const std::size_t k = receive_of_[r.file][r.node];
    receives_[k].stream_task = s->last_task;
    receives_[k].stream_receive = s->pending_receive;
    s->pending_receive = k;
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
    for (const NodeRef& r : refs) out.push_back(resource_of(r));
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
    if (!op) {
      const auto type = static_cast<int>(std::min<std::int64_t>(*n.comm_type, std::numeric_limits<int>::max()));
      const std::string name = ChakraProtoMsg::CollectiveCommType_IsValid(type)
                                   ? " (" + ChakraProtoMsg::CollectiveCommType_Name(type) + ")"
                                   : std::string();
      fail(first, fmt::format("comm_type {}{} is not a collective moeplan simulates (ALL_REDUCE 0, ALL_GATHER 2, "
                              "BROADCAST 5, ALL_TO_ALL 6, REDUCE_SCATTER 7, BARRIER 9)",
                              *n.comm_type, name));
    }
    dag::TaskSpec s = spec_of(n, dag::TaskKind::Communication, *op);
    s.size = priced_bytes(n, c.members.size(), files_[first.file].nccl_tests_comm_size);
    s.group_size = static_cast<std::int32_t>(n.group_size.value_or(static_cast<std::int64_t>(c.members.size())));
    if (comm_ == CommPricing::Model) {
      if (n.group_size && *n.group_size != static_cast<std::int64_t>(c.members.size()))
        fail(first, fmt::format("was priced for {} ranks, but pg_name {} has {}; import it with {} trace",
                                *n.group_size, quoted_for_error(c.pg), c.members.size(), option_ref("request.comm")));
      const cost::GroupShape shape = shape_of(c.members);
      s.duration_ms = *n.comm_type == ChakraProtoMsg::BROADCAST ? costs_.broadcast(shape, s.size).value
                                                                : costs_.communication(*op, shape, s.size).value;
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

  // A send: its message's time on the sender's stream (the receive's own
  // time in the trace is not used: it ends when the message has arrived and
  // it is posted).
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
    s.resources = resources_for({send});
    task_of_[send.file][send.node] = add(s, s.resources);
    ++out_.transfers;
  }

  [[noreturn]] void fail_bound(const NodeRef& r) const {
    fail(r, fmt::format("brings the dependencies of the trace's files, once receives are passed through (what waits "
                        "for a receive waits for its send and for all the receive waits for), to more than {}, the "
                        "limit of one import",
                        kMaxChakraDependencies));
  }

  // The tasks a node's dependents wait for: its task, or a receive's set.
  const std::vector<TaskId>& done_of(std::size_t file, std::size_t node, std::vector<TaskId>& one) const {
    if (task_of_[file][node] != kNoTask) {
      one.assign(1, task_of_[file][node]);
      return one;
    }
    const std::size_t k = receive_of_[file][node];
    MOEPLAN_CHECK(k != kNone, "a node without a task is a receive (pass-through nodes are resolved when parsed)");
    return receives_[k].waits;
  }

  // Each receive's set: its send's task, what its dependencies' dependents
  // wait for, and on an in-order stream what the stream's work before it
  // does. Receives before it come first (depth first, without recursion: a
  // chain of receives may be as long as a file); one it waits for that waits
  // for it is a cycle through an in-order stream's issue order (the
  // dependencies of one file were checked acyclic when parsed).
  void resolve_receives() {
    using State = Receive::State;
    std::vector<std::size_t> stack;
    for (std::size_t start = 0; start < receives_.size(); ++start) {
      stack.push_back(start);
      while (!stack.empty()) {
        Receive& x = receives_[stack.back()];
        if (x.state == State::Done) {
          stack.pop_back();
        } else if (x.state == State::Unseen) {
          x.state = State::Open;
          for_each_earlier_receive(x, [&](std::size_t k) {
            if (receives_[k].state == State::Open)
              fail(x.node, "lies on a dependency cycle (its dependencies with its in-order stream's issue order)");
            if (receives_[k].state == State::Unseen) stack.push_back(k);
          });
        } else {
          gather_waits(x);
          x.state = State::Done;
          stack.pop_back();
        }
      }
    }
  }

  template <typename F>
  void for_each_earlier_receive(const Receive& x, F&& f) const {
    for (std::size_t d : files_[x.node.file].deps[x.node.node])
      if (task_of_[x.node.file][d] == kNoTask) f(receive_of_[x.node.file][d]);
    if (x.stream_receive != kNone) f(x.stream_receive);
  }

  void gather_waits(Receive& x) {
    std::vector<TaskId> one, waits{task_of_[x.send.file][x.send.node]};
    auto take = [&](const std::vector<TaskId>& set) {
      if (set.size() > kMaxChakraDependencies - counts_.resolved_dependencies) fail_bound(x.node);
      counts_.resolved_dependencies += set.size();
      waits.insert(waits.end(), set.begin(), set.end());
    };
    for (std::size_t d : files_[x.node.file].deps[x.node.node]) take(done_of(x.node.file, d, one));
    if (x.stream_task != kNoTask) waits.push_back(x.stream_task);
    if (x.stream_receive != kNone) take(receives_[x.stream_receive].waits);
    std::sort(waits.begin(), waits.end());
    waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
    x.waits = std::move(waits);
  }

  // Edges from what `before` (a node of file f) is done after into task t, which waits for it.
  void wait_for(std::size_t f, std::size_t before, TaskId t, const NodeRef& waiter) {
    std::vector<TaskId> one;
    const std::vector<TaskId>& set = done_of(f, before, one);
    if (set.size() > 1 || task_of_[f][before] == kNoTask) {
      if (set.size() > kMaxChakraDependencies - counts_.resolved_dependencies) fail_bound(waiter);
      counts_.resolved_dependencies += set.size();
    }
    for (TaskId w : set) {
      if (w != t) {
        edges_.emplace_back(w, t);
      } else if (task_of_[f][before] == kNoTask) {
        // t waits for a receive that waits for t: through an in-order stream's order.
        fail(waiter, fmt::format("lies on a dependency cycle through the receive {} (its dependencies with its "
                                 "in-order stream's issue order)",
                                 node_label(node({f, before}))));
      }
    }
  }

  void add_dependencies() {
    for (std::size_t f = 0; f < files_.size(); ++f)
      for (std::size_t i = 0; i < files_[f].nodes.size(); ++i) {
        const TaskId t = task_of_[f][i];
        if (t == kNoTask) continue;
        for (std::size_t d : files_[f].deps[i]) wait_for(f, d, t, {f, i});
      }
    for (const auto& [k, t] : after_receive_)
      wait_for(receives_[k].node.file, receives_[k].node.node, t, receives_[k].node);
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
  std::vector<std::vector<std::size_t>> coll_of_;     // per file and node: its collective, else kNone
  std::vector<std::vector<NodeRef>> partner_;         // per send: its receive
  std::vector<std::vector<std::size_t>> receive_of_;  // per file and node: its receive, else kNone
  std::vector<Receive> receives_;
  std::vector<std::vector<TaskId>> task_of_;                        // per file and node: its task, else kNoTask
  std::map<std::pair<std::int32_t, std::string>, Stream> streams_;  // by (rank, name); nodes stay put
  std::vector<Stream*> by_resource_;                                // per resource id: its stream
  std::vector<std::pair<std::size_t, TaskId>> after_receive_;       // (receive, the next task on its stream)
  detail::ImportCounts counts_;
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
