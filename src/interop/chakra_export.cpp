// Task graph -> Chakra execution trace, one file per rank (docs/formats.md,
// "Chakra execution traces"). A task appears in the file of every rank it
// holds a stream of: a compute task once, a collective once per member rank
// (one node id, one communicator group), a point-to-point transfer as a send
// in the sender's file and a receive in the file of the rank that waits for it.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <boost/range/iterator_range.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/version.hpp>
#include <moeplan/interop/chakra.hpp>
#include <moeplan/io/json.hpp>

#include "chakra_attributes.hpp"

namespace moeplan::interop {
namespace {

using ChakraProtoMsg::Node;
using dag::TaskId;

// Chakra's schema version these files follow (et_def.proto as of Chakra 0.0.4;
// its generators write GlobalMetadata(version="0.0.4")).
constexpr const char* kChakraSchemaVersion = "0.0.4";
constexpr double kMicrosPerMs = 1000.0;

const char* policy_name(dag::DispatchPolicy policy) {
  switch (policy) {
    case dag::DispatchPolicy::InOrder:
      return "in_order";
    case dag::DispatchPolicy::Priority:
      return "priority";
    case dag::DispatchPolicy::Shared:
      return "shared";
  }
  return "?";
}

std::optional<ChakraProtoMsg::CollectiveCommType> collective_of(model::OpClass op) {
  switch (op) {
    case model::OpClass::AllReduce:
      return ChakraProtoMsg::ALL_REDUCE;
    case model::OpClass::AllGather:
      return ChakraProtoMsg::ALL_GATHER;
    case model::OpClass::A2A:
      return ChakraProtoMsg::ALL_TO_ALL;
    case model::OpClass::ReduceScatter:
      return ChakraProtoMsg::REDUCE_SCATTER;
    default:
      return std::nullopt;
  }
}

// Whole microseconds (Chakra's unit), rounded to the nearest.
std::uint64_t micros(double ms) { return static_cast<std::uint64_t>(std::llround(std::max(0.0, ms) * kMicrosPerMs)); }

// A stream of one rank: which rank, and its index in that rank's stream table.
struct Placement {
  std::int32_t rank = 0;
  std::int32_t stream = 0;
};

class Exporter {
 public:
  Exporter(const dag::TaskGraph& g, const sim::Timeline& tl, const ChakraExportOptions& o) : g_(g), tl_(tl), o_(o) {}

  ChakraExport run() {
    index_streams();
    place_tasks();
    ChakraExport out;
    out.representative = o_.representative || representative_;
    nodes_.resize(static_cast<std::size_t>(ranks_));
    std::vector<TaskId> last_on(g_.resources().size(), kNone);
    for (TaskId t = 0; t < g_.size(); ++t) {
      emit(t, last_on, out);
      for (dag::ResourceId res : g_.resources(t)) last_on[res] = t;
    }
    for (std::int32_t r = 0; r < ranks_; ++r) out.files.push_back(file_of(r, out.representative));
    out.comm_groups_json = groups_json();
    out.groups = groups_.size();
    return out;
  }

 private:
  static constexpr TaskId kNone = std::numeric_limits<TaskId>::max();

  [[noreturn]] void refuse(TaskId t, const std::string& why) const {
    throw Error(ErrorKind::Runtime,
                fmt::format("task {} ({}): {}; a Chakra trace cannot carry it", t, g_.name(t), why));
  }

  // Streams are numbered per rank in resource order; ranks 0..max hold a file each.
  void index_streams() {
    for (const dag::Resource& res : g_.resources()) ranks_ = std::max(ranks_, res.rank + 1);
    streams_.resize(static_cast<std::size_t>(ranks_));
    for (const dag::Resource& res : g_.resources()) {
      if (res.policy == dag::DispatchPolicy::Shared)
        throw Error(ErrorKind::Runtime, fmt::format("resource {} of rank {} is a shared link with a capacity, which a "
                                                    "Chakra trace has no field for",
                                                    res.name, res.rank));
      auto& table = streams_[static_cast<std::size_t>(res.rank)];
      stream_of_.push_back(static_cast<std::int32_t>(table.size()));
      table.push_back(fmt::format("{}:{}", res.name, policy_name(res.policy)));
    }
  }

  // Where every task runs, and which rank receives each transfer.
  void place_tasks() {
    placements_.resize(g_.size());
    receiver_.assign(g_.size(), -1);
    for (TaskId t = 0; t < g_.size(); ++t) {
      if (g_.resources(t).empty()) refuse(t, "it holds no stream");
      for (dag::ResourceId res : g_.resources(t)) {
        const std::int32_t rank = g_.resources()[res].rank;
        for (const Placement& p : placements_[t])
          if (p.rank == rank) refuse(t, fmt::format("it holds two streams of rank {}", rank));
        placements_[t].push_back({rank, stream_of_[res]});
      }
      const bool communication = g_.kind(t) == dag::TaskKind::Communication;
      if (!communication && placements_[t].size() > 1) refuse(t, "a compute task runs on several ranks");
      if (communication && g_.op(t) != model::OpClass::P2P && !collective_of(g_.op(t)))
        refuse(t, fmt::format("communication of op {} is neither a collective nor a transfer",
                              model::to_string(g_.op(t))));
      if (communication && collective_of(g_.op(t)) &&
          g_.group_size(t) > static_cast<std::int32_t>(placements_[t].size()))
        representative_ = true;
    }
    for (TaskId t = 0; t < g_.size(); ++t)
      if (g_.kind(t) == dag::TaskKind::Communication && g_.op(t) == model::OpClass::P2P) place_receiver(t);
  }

  bool on_rank(TaskId t, std::int32_t rank) const {
    return std::any_of(placements_[t].begin(), placements_[t].end(),
                       [&](const Placement& p) { return p.rank == rank; });
  }

  // The receiver of a transfer is the rank of the tasks that wait for it
  // elsewhere than on the sender (moeplan's pipeline: the next stage's compute).
  void place_receiver(TaskId t) {
    if (placements_[t].size() != 1) refuse(t, "a transfer holds the streams of two ranks");
    const std::int32_t sender = placements_[t].front().rank;
    for (TaskId s : boost::make_iterator_range(adjacent_vertices(t, g_.successors_graph()))) {
      std::int32_t rank = std::numeric_limits<std::int32_t>::max();
      for (dag::ResourceId res : g_.resources(s)) rank = std::min(rank, g_.resources()[res].rank);
      if (rank == std::numeric_limits<std::int32_t>::max() || on_rank(s, sender)) continue;
      if (receiver_[t] >= 0 && receiver_[t] != rank)
        refuse(t, fmt::format("tasks of ranks {} and {} wait for one transfer", receiver_[t], rank));
      receiver_[t] = rank;
    }
    if (receiver_[t] < 0) refuse(t, "no task of another rank waits for the transfer, so it has no receiver");
  }

  // The communicator of a collective: its member ranks, numbered from 1 in
  // order of first use (ASTRA-sim reads pg_name "0" and "" as every rank).
  std::int64_t group_of(TaskId t) {
    std::vector<std::int32_t> members;
    for (const Placement& p : placements_[t]) members.push_back(p.rank);
    std::sort(members.begin(), members.end());
    auto [it, added] = groups_.try_emplace(members, static_cast<std::int64_t>(groups_.size()) + 1);
    if (added) group_order_.push_back(members);
    return it->second;
  }

  double compute_factor(std::int32_t rank) const {
    const auto r = static_cast<std::size_t>(rank);
    return r < o_.rank_compute_slowdown.size() ? o_.rank_compute_slowdown[r] : 1.0;
  }

  void emit(TaskId t, const std::vector<TaskId>& last_on, ChakraExport& out) {
    const auto& res = g_.resources(t);
    const bool communication = g_.kind(t) == dag::TaskKind::Communication;
    const bool p2p = communication && g_.op(t) == model::OpClass::P2P;
    const std::int64_t group = communication && !p2p ? group_of(t) : 0;
    const auto preds = boost::make_iterator_range(adjacent_vertices(t, g_.predecessors_graph()));
    std::vector<TaskId> pred_list(preds.begin(), preds.end());
    std::vector<bool> carried(pred_list.size(), false);
    for (std::size_t i = 0; i < res.size(); ++i) {
      const Placement& p = placements_[t][i];
      Node n = base_node(t);
      attr::add(n, attr::kStream).set_int64_val(p.stream);
      // Dependencies held in this rank's file: the task itself, or the receive of a transfer.
      for (std::size_t k = 0; k < pred_list.size(); ++k) {
        const TaskId a = pred_list[k];
        if (on_rank(a, p.rank) || receiver_[a] == p.rank) {
          n.add_data_deps(a);
          carried[k] = true;
        }
      }
      // An in-order stream starts its tasks in issue order: a dependency on
      // the task before on the stream, so that a reader without streams
      // (ASTRA-sim) keeps the order.
      if (g_.resources()[res[i]].policy == dag::DispatchPolicy::InOrder && last_on[res[i]] != kNone)
        n.add_data_deps(last_on[res[i]]);
      if (!communication) {
        n.set_type(ChakraProtoMsg::COMP_NODE);
        const double ms = g_.duration_ms(t) * compute_factor(p.rank);
        n.set_duration_micros(micros(ms));
        attr::add(n, attr::kNumOps).set_int64_val(whole(t, g_.size(t), "FLOPs"));
        attr::add(n, attr::kOp).set_string_val(model::to_string(g_.op(t)));
        attr::add(n, attr::kDurationMs).set_double_val(ms);
        ++out.compute_nodes;
      } else if (p2p) {
        n.set_type(ChakraProtoMsg::COMM_SEND_NODE);
        add_transfer(n, t, p.rank, receiver_[t]);
        attr::add(n, attr::kDurationMs).set_double_val(g_.duration_ms(t));
        ++out.send_nodes;
      } else {
        n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
        attr::add(n, attr::kCommType).set_int64_val(*collective_of(g_.op(t)));
        add_size(n, t);
        attr::add(n, attr::kPgName).set_string_val(std::to_string(group));
        attr::add(n, attr::kGroupSize).set_int64_val(g_.group_size(t));
        attr::add(n, attr::kDurationMs).set_double_val(g_.duration_ms(t));
        ++out.collective_nodes;
      }
      if (g_.priority(t) != 0) attr::add(n, attr::kCommPriority).set_int32_val(g_.priority(t));
      add_labels(n, t);
      finish(n, p.rank);
    }
    for (std::size_t k = 0; k < pred_list.size(); ++k)
      if (!carried[k])
        refuse(t, fmt::format("it waits for task {} ({}) of another rank, and only collectives and transfers cross "
                              "ranks in a Chakra trace",
                              pred_list[k], g_.name(pred_list[k])));
    if (p2p) {
      // The receive: where the receiver's tasks wait for the transfer. It holds
      // no stream (moeplan prices a transfer on the sender's stream alone).
      Node n = base_node(t);
      n.set_type(ChakraProtoMsg::COMM_RECV_NODE);
      add_transfer(n, t, placements_[t].front().rank, receiver_[t]);
      add_labels(n, t);
      finish(n, receiver_[t]);
      ++out.recv_nodes;
    }
  }

  Node base_node(TaskId t) const {
    Node n;
    n.set_id(t);
    n.set_name(std::string(g_.name(t)));
    n.set_start_time_micros(micros(tl_.start_ms[t]));
    n.set_duration_micros(micros(g_.duration_ms(t)));
    // ASTRA-sim's older feeders take a node without is_cpu_op for a CPU operation.
    attr::add(n, attr::kIsCpuOp).set_bool_val(false);
    return n;
  }

  void add_transfer(Node& n, TaskId t, std::int32_t src, std::int32_t dst) const {
    attr::add(n, attr::kCommSrc).set_int32_val(src);
    attr::add(n, attr::kCommDst).set_int32_val(dst);
    if (t > static_cast<TaskId>(std::numeric_limits<std::int32_t>::max())) refuse(t, "its id does not fit a comm_tag");
    attr::add(n, attr::kCommTag).set_int32_val(static_cast<std::int32_t>(t));
    add_size(n, t);
  }

  void add_size(Node& n, TaskId t) const {
    const double bytes = g_.size(t);
    attr::add(n, attr::kCommSize).set_int64_val(whole(t, bytes, "bytes"));
    // comm_size is whole bytes; a size the cost model priced with a fraction
    // (a buffer split in R parts) travels exactly beside it.
    if (bytes != std::round(bytes)) attr::add(n, attr::kCommBytes).set_double_val(bytes);
  }

  void add_labels(Node& n, TaskId t) const {
    if (g_.phase(t) != dag::Phase::None) attr::add(n, attr::kPhase).set_string_val(dag::to_string(g_.phase(t)));
    if (g_.layer(t) >= 0) attr::add(n, attr::kLayer).set_int64_val(g_.layer(t));
    if (g_.micro_batch(t) >= 0) attr::add(n, attr::kMicroBatch).set_int64_val(g_.micro_batch(t));
  }

  std::int64_t whole(TaskId t, double value, const char* unit) const {
    // 2^63 as a double: the first value an int64 cannot hold.
    constexpr double kLimit = 9223372036854775808.0;
    if (!std::isfinite(value) || value < 0 || std::round(value) >= kLimit)
      refuse(t, fmt::format("its {} {} do not fit an int64 attribute", value, unit));
    return static_cast<std::int64_t>(std::llround(value));
  }

  // Dependencies in ascending order, each once.
  void finish(Node& n, std::int32_t rank) {
    auto* deps = n.mutable_data_deps();
    std::sort(deps->begin(), deps->end());
    deps->erase(std::unique(deps->begin(), deps->end()), deps->end());
    std::string bytes;
    n.SerializeToString(&bytes);
    nodes_[static_cast<std::size_t>(rank)].emplace_back(n.id(), std::move(bytes));
  }

  std::string file_of(std::int32_t rank, bool representative) {
    ChakraProtoMsg::GlobalMetadata meta;
    meta.set_version(kChakraSchemaVersion);
    attr::add(meta, attr::kVersion).set_string_val(kVersion);
    attr::add(meta, attr::kScenario).set_string_val(o_.scenario);
    attr::add(meta, attr::kSchedule).set_string_val(o_.schedule);
    attr::add(meta, attr::kRank).set_int64_val(rank);
    attr::add(meta, attr::kRanks).set_int64_val(ranks_);
    attr::add(meta, attr::kRepresentative).set_bool_val(representative);
    auto& streams = *attr::add(meta, attr::kStreams).mutable_string_list();
    for (const std::string& s : streams_[static_cast<std::size_t>(rank)]) streams.add_values(s);
    std::string out, bytes;
    meta.SerializeToString(&bytes);
    append_delimited(out, bytes);
    // Nodes by id: a receive sits among the receiver's own tasks by the id of its transfer.
    auto& list = nodes_[static_cast<std::size_t>(rank)];
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [id, node] : list) append_delimited(out, node);
    return out;
  }

  std::string groups_json() const {
    io::Json j = io::Json::object();
    for (std::size_t i = 0; i < group_order_.size(); ++i) {
      io::Json members = io::Json::array();
      for (std::int32_t r : group_order_[i]) members.push(static_cast<std::int64_t>(r));
      j.set(std::to_string(i + 1), std::move(members));
    }
    return j.dump() + "\n";
  }

  const dag::TaskGraph& g_;
  const sim::Timeline& tl_;
  const ChakraExportOptions& o_;
  std::int32_t ranks_ = 1;
  bool representative_ = false;
  std::vector<std::vector<std::string>> streams_;  // per rank: "name:policy"
  std::vector<std::int32_t> stream_of_;            // per resource
  std::vector<std::vector<Placement>> placements_;
  std::vector<std::int32_t> receiver_;  // per transfer: the receiving rank, else -1
  std::map<std::vector<std::int32_t>, std::int64_t> groups_;
  std::vector<std::vector<std::int32_t>> group_order_;
  std::vector<std::vector<std::pair<std::uint64_t, std::string>>> nodes_;  // per rank: (id, serialized node)
};

}  // namespace

ChakraExport export_chakra(const dag::TaskGraph& graph, const sim::Timeline& timeline,
                           const ChakraExportOptions& options) {
  MOEPLAN_CHECK(timeline.start_ms.size() == graph.size(), "the timeline is the graph's");
  return Exporter(graph, timeline, options).run();
}

}  // namespace moeplan::interop
