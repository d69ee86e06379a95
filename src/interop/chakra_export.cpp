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

// A stream of one rank: which rank, its index in that rank's stream table,
// and its resource.
struct Placement {
  std::int32_t rank = 0;
  std::int32_t stream = 0;
  dag::ResourceId resource = 0;
};

// ASTRA-sim's size of a collective from the cost model's (nccl-tests' `size`:
// the larger buffer). ASTRA-sim's Ring (astra-sim 518bd51,
// system/astraccl/native_collectives/collective_algorithm/Ring.cc lines 71-86)
// reads an ALL_GATHER's comm_size as each rank's input (final_data_size =
// data_size x nodes_in_ring), a REDUCE_SCATTER's as the input it reduces
// (final = data_size / n), an ALL_REDUCE's and an ALL_TO_ALL's as the buffer:
// only the all-gather differs, by its group's size: nccl-tests' size is
// ASTRA-sim's times this.
double nccl_tests_per_chakra_size(model::OpClass op, std::int32_t group) {
  return op == model::OpClass::AllGather ? static_cast<double>(group) : 1.0;
}

class Exporter {
 public:
  Exporter(const dag::TaskGraph& g, const sim::Timeline& tl, const ChakraExportOptions& o) : g_(g), tl_(tl), o_(o) {}

  // Every check first, then one rank's file at a time.
  ChakraExport run(ChakraFileSink& sink) {
    index_streams();
    place_tasks();
    index_dependencies();
    number_groups();
    ChakraExport out;
    out.ranks = ranks_;
    index_ranks();
    sink.begin(ranks_);
    for (std::int32_t r = 0; r < ranks_; ++r) {
      const std::string file = file_of(r, out);
      sink.file(r, file);
    }
    out.comm_groups_json = groups_json();
    out.groups = group_order_.size();
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
      std::vector<Placement>& list = placements_[t];
      for (dag::ResourceId res : g_.resources(t)) list.push_back({g_.resources()[res].rank, stream_of_[res], res});
      // By rank: a collective over every rank is looked up once per member's
      // file, so on_rank is a binary search.
      std::sort(list.begin(), list.end(), [](const Placement& a, const Placement& b) { return a.rank < b.rank; });
      const auto twice = std::adjacent_find(list.begin(), list.end(),
                                            [](const Placement& a, const Placement& b) { return a.rank == b.rank; });
      if (twice != list.end()) refuse(t, fmt::format("it holds two streams of rank {}", twice->rank));
      const bool communication = g_.kind(t) == dag::TaskKind::Communication;
      if (!communication && placements_[t].size() > 1) refuse(t, "a compute task runs on several ranks");
      if (communication && g_.op(t) != model::OpClass::P2P && !collective_of(g_.op(t)))
        refuse(t, fmt::format("communication of op {} is neither a collective nor a transfer",
                              model::to_string(g_.op(t))));
      // A rank that stands for others: ASTRA-sim runs a collective over the
      // files of its members, and they are not there.
      if (communication && collective_of(g_.op(t)) &&
          g_.group_size(t) > static_cast<std::int32_t>(placements_[t].size()))
        refuse(t, fmt::format("a collective priced for {} ranks holds the streams of {}: the graph's ranks stand for "
                              "others, whose files ASTRA-sim would need",
                              g_.group_size(t), placements_[t].size()));
    }
    for (TaskId t = 0; t < g_.size(); ++t)
      if (g_.kind(t) == dag::TaskKind::Communication && g_.op(t) == model::OpClass::P2P) place_receiver(t);
  }

  // t's placement on rank, or nullptr.
  const Placement* placement(TaskId t, std::int32_t rank) const {
    const std::vector<Placement>& list = placements_[t];
    const auto it = std::lower_bound(list.begin(), list.end(), rank,
                                     [](const Placement& p, std::int32_t r) { return p.rank < r; });
    return it != list.end() && it->rank == rank ? &*it : nullptr;
  }
  bool on_rank(TaskId t, std::int32_t rank) const { return placement(t, rank) != nullptr; }

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

  // Each dependency must be in some file of the task: on a rank the task
  // holds, or the receive of a transfer there. For a task on several ranks
  // (a collective) the dependencies are sorted by the rank whose file holds
  // them, so that each member's file finds its own without reading every
  // member's: a gradient all-reduce over 16,384 ranks waits for a task on
  // each of them.
  void index_dependencies() {
    spread_deps_.resize(g_.size());
    for (TaskId t = 0; t < g_.size(); ++t) {
      const bool spread = placements_[t].size() > 1;
      for (TaskId a : boost::make_iterator_range(adjacent_vertices(t, g_.predecessors_graph()))) {
        bool carried = false;
        const auto carry = [&](std::int32_t rank) {
          if (!on_rank(t, rank)) return;
          carried = true;
          if (spread) spread_deps_[t].emplace_back(rank, a);
        };
        if (spread || placements_[a].size() == 1) {
          for (const Placement& q : placements_[a]) carry(q.rank);
          if (receiver_[a] >= 0) carry(receiver_[a]);
        } else {
          carried = on_rank(a, placements_[t].front().rank) || receiver_[a] == placements_[t].front().rank;
        }
        if (!carried)
          refuse(t, fmt::format("it waits for task {} ({}) of another rank, and only collectives and transfers cross "
                                "ranks in a Chakra trace",
                                a, g_.name(a)));
      }
      std::sort(spread_deps_[t].begin(), spread_deps_[t].end());
    }
  }

  // t's dependencies in the file of `rank`, added to n.
  void add_dependencies(Node& n, TaskId t, std::int32_t rank) {
    if (placements_[t].size() == 1) {
      for (TaskId a : boost::make_iterator_range(adjacent_vertices(t, g_.predecessors_graph())))
        if (on_rank(a, rank) || receiver_[a] == rank) n.add_data_deps(a);
      return;
    }
    std::vector<std::pair<std::int32_t, TaskId>>& deps = spread_deps_[t];
    auto it = std::lower_bound(deps.begin(), deps.end(), std::pair{rank, TaskId{0}});
    for (; it != deps.end() && it->first == rank; ++it) n.add_data_deps(it->second);
    // Files are written in rank order: after its last member's, t's index is spent.
    if (rank == placements_[t].back().rank) std::vector<std::pair<std::int32_t, TaskId>>().swap(deps);
  }

  // The communicators of the collectives: their member ranks, numbered from 1
  // in task order (ASTRA-sim reads pg_name "0" and "" as every rank).
  void number_groups() {
    group_.assign(g_.size(), 0);
    for (TaskId t = 0; t < g_.size(); ++t) {
      if (g_.kind(t) != dag::TaskKind::Communication || g_.op(t) == model::OpClass::P2P) continue;
      std::vector<std::int32_t> members;
      for (const Placement& p : placements_[t]) members.push_back(p.rank);
      std::sort(members.begin(), members.end());
      auto [it, added] = groups_.try_emplace(members, static_cast<std::int64_t>(groups_.size()) + 1);
      if (added) group_order_.push_back(std::move(members));
      group_[t] = it->second;
    }
  }

  // Per rank, the tasks of its file in id order: those it holds a stream of,
  // and the transfers it receives.
  void index_ranks() {
    tasks_of_.resize(static_cast<std::size_t>(ranks_));
    for (TaskId t = 0; t < g_.size(); ++t) {
      for (const Placement& p : placements_[t]) tasks_of_[static_cast<std::size_t>(p.rank)].push_back(t);
      if (receiver_[t] >= 0) tasks_of_[static_cast<std::size_t>(receiver_[t])].push_back(t);
    }
  }

  double compute_factor(std::int32_t rank) const {
    const auto r = static_cast<std::size_t>(rank);
    return r < o_.rank_compute_slowdown.size() ? o_.rank_compute_slowdown[r] : 1.0;
  }

  // One rank's file: its GlobalMetadata, then its nodes by id.
  std::string file_of(std::int32_t rank, ChakraExport& out) {
    ChakraProtoMsg::GlobalMetadata meta;
    meta.set_version(kChakraSchemaVersion);
    attr::add(meta, attr::kVersion).set_string_val(kVersion);
    attr::add(meta, attr::kScenario).set_string_val(o_.scenario);
    attr::add(meta, attr::kSchedule).set_string_val(o_.schedule);
    attr::add(meta, attr::kRank).set_int64_val(rank);
    attr::add(meta, attr::kRanks).set_int64_val(ranks_);
    attr::add(meta, attr::kCommSizeConvention).set_string_val(attr::kAstraSimConvention);
    auto& streams = *attr::add(meta, attr::kStreams).mutable_string_list();
    for (const std::string& s : streams_[static_cast<std::size_t>(rank)]) streams.add_values(s);
    std::string file, bytes;
    meta.SerializeToString(&bytes);
    append_delimited(file, bytes);
    // The task before on each of this rank's streams: a task holds one stream
    // of a rank, so the rank's tasks in id order give each stream's order.
    last_on_.assign(streams_[static_cast<std::size_t>(rank)].size(), kNone);
    std::vector<TaskId>& tasks = tasks_of_[static_cast<std::size_t>(rank)];
    for (const TaskId t : tasks) {
      const Node n = node_of(t, rank, out);
      n.SerializeToString(&bytes);
      append_delimited(file, bytes);
    }
    std::vector<TaskId>().swap(tasks);  // this rank's index is spent
    return file;
  }

  Node node_of(TaskId t, std::int32_t rank, ChakraExport& out) {
    const Placement* p = placement(t, rank);
    Node n = base_node(t);
    if (p == nullptr) {
      // The receive of a transfer: where the receiver's tasks wait for it. It
      // holds no stream (moeplan prices a transfer on the sender's stream alone).
      n.set_type(ChakraProtoMsg::COMM_RECV_NODE);
      add_transfer(n, t, placements_[t].front().rank, rank);
      add_labels(n, t);
      ++out.recv_nodes;
      return n;
    }
    attr::add(n, attr::kStream).set_int64_val(p->stream);
    // Dependencies held in this rank's file: the task itself, or the receive of a transfer.
    add_dependencies(n, t, rank);
    // An in-order stream starts its tasks in issue order: a dependency on
    // the task before on the stream, so that a reader without streams
    // (ASTRA-sim) keeps the order.
    TaskId& before = last_on_[static_cast<std::size_t>(p->stream)];
    if (g_.resources()[p->resource].policy == dag::DispatchPolicy::InOrder && before != kNone) n.add_data_deps(before);
    before = t;
    const bool communication = g_.kind(t) == dag::TaskKind::Communication;
    if (!communication) {
      add_compute(n, t, rank);
      ++out.compute_nodes;
    } else if (g_.op(t) == model::OpClass::P2P) {
      n.set_type(ChakraProtoMsg::COMM_SEND_NODE);
      add_transfer(n, t, rank, receiver_[t]);
      attr::add(n, attr::kDurationMs).set_double_val(g_.duration_ms(t));
      ++out.send_nodes;
    } else {
      n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
      attr::add(n, attr::kCommType).set_int64_val(*collective_of(g_.op(t)));
      add_size(n, t);
      attr::add(n, attr::kPgName).set_string_val(std::to_string(group_[t]));
      attr::add(n, attr::kGroupSize).set_int64_val(g_.group_size(t));
      attr::add(n, attr::kDurationMs).set_double_val(g_.duration_ms(t));
      ++out.collective_nodes;
    }
    if (g_.priority(t) != 0) attr::add(n, attr::kCommPriority).set_int32_val(g_.priority(t));
    add_labels(n, t);
    auto* deps = n.mutable_data_deps();
    std::sort(deps->begin(), deps->end());
    deps->erase(std::unique(deps->begin(), deps->end()), deps->end());
    return n;
  }

  // num_ops and tensor_size are what ASTRA-sim's roofline mode reads
  // (astra-sim 518bd51 workload/Workload.cc issue_comp: operational intensity
  // = num_ops / tensor_size, both uint64); it replays duration_micros otherwise.
  void add_compute(Node& n, TaskId t, std::int32_t rank) const {
    n.set_type(ChakraProtoMsg::COMP_NODE);
    const double ms = g_.duration_ms(t) * compute_factor(rank);
    n.set_duration_micros(micros(ms));
    const model::OpClass op = g_.op(t);
    if (op == model::OpClass::Elementwise) {
      // Priced by the bytes it moves (the `elementwise` line): those are its
      // tensor_size. A roofline times a memory-bound kernel by tensor_size
      // alone (num_ops / (bandwidth x num_ops / tensor_size)); num_ops, one
      // operation per element moved, only has to keep it memory-bound.
      const std::int64_t bytes = whole(t, g_.size(t), "bytes");
      attr::add(n, attr::kNumOps).set_int64_val(whole(t, static_cast<double>(bytes) / o_.dtype_bytes, "elements"));
      attr::add(n, attr::kTensorSize).set_uint64_val(static_cast<std::uint64_t>(bytes));
    } else {
      attr::add(n, attr::kNumOps).set_int64_val(whole(t, g_.size(t), "FLOPs"));
      if (const dag::WorkShape* work = g_.work(t)) {
        // FP8 GEMMs read 1-byte operands (E4M3/E5M2) and write the model's dtype.
        const double operand = op == model::OpClass::GemmFp8 ? 1.0 : o_.dtype_bytes;
        attr::add(n, attr::kTensorSize)
            .set_uint64_val(static_cast<std::uint64_t>(whole(t, dag::work_bytes(*work, operand, o_.dtype_bytes),
                                                             "bytes")));
      }
    }
    attr::add(n, attr::kOp).set_string_val(model::to_string(op));
    attr::add(n, attr::kDurationMs).set_double_val(ms);
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

  // comm_size is whole bytes in Chakra's (ASTRA-sim's) convention; the size
  // the cost model priced (nccl-tests' convention, maybe a fraction of a byte
  // when a buffer is split in R parts) travels beside it whenever comm_size
  // does not give it back exactly.
  void add_size(Node& n, TaskId t) const {
    const double priced = g_.size(t);
    const double ratio = nccl_tests_per_chakra_size(g_.op(t), g_.group_size(t));
    const std::int64_t written = whole(t, priced / ratio, "bytes");
    attr::add(n, attr::kCommSize).set_int64_val(written);
    if (static_cast<double>(written) * ratio != priced) attr::add(n, attr::kCommBytes).set_double_val(priced);
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
  std::vector<std::vector<std::string>> streams_;  // per rank: "name:policy"
  std::vector<std::int32_t> stream_of_;            // per resource
  std::vector<std::vector<Placement>> placements_;
  std::vector<std::int32_t> receiver_;  // per transfer: the receiving rank, else -1
  std::map<std::vector<std::int32_t>, std::int64_t> groups_;
  std::vector<std::vector<std::int32_t>> group_order_;
  std::vector<std::int64_t> group_;             // per collective: its pg_name
  std::vector<std::vector<TaskId>> tasks_of_;   // per rank: its file's tasks, by id
  std::vector<TaskId> last_on_;                 // per stream of the rank being written
  // Per task on several ranks: (rank, dependency) of each dependency in a member's file, by rank.
  std::vector<std::vector<std::pair<std::int32_t, TaskId>>> spread_deps_;
};

// Holds every file (the overload without a sink).
class FilesInMemory final : public ChakraFileSink {
 public:
  explicit FilesInMemory(std::vector<std::string>& files) : files_(files) {}
  void begin(std::int32_t ranks) override { files_.reserve(static_cast<std::size_t>(ranks)); }
  void file(std::int32_t, std::string_view bytes) override { files_.emplace_back(bytes); }

 private:
  std::vector<std::string>& files_;
};

}  // namespace

ChakraExport export_chakra(const dag::TaskGraph& graph, const sim::Timeline& timeline,
                           const ChakraExportOptions& options, ChakraFileSink& sink) {
  MOEPLAN_CHECK(timeline.start_ms.size() == graph.size(), "the timeline is the graph's");
  return Exporter(graph, timeline, options).run(sink);
}

ChakraExport export_chakra(const dag::TaskGraph& graph, const sim::Timeline& timeline,
                           const ChakraExportOptions& options) {
  std::vector<std::string> files;
  FilesInMemory sink(files);
  ChakraExport out = export_chakra(graph, timeline, options, sink);
  out.files = std::move(files);
  return out;
}

}  // namespace moeplan::interop
