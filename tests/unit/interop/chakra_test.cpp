#include <catch2/catch.hpp>

#include <map>
#include <set>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/dag/task_graph.hpp>
#include <moeplan/interop/chakra.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/sim/engine.hpp>

#include "../test_support.hpp"
#include "chakra_parse.hpp"
#include "et_def.pb.h"

using namespace moeplan;
using interop::ChakraFile;
using interop::ChakraInput;
using interop::CommPricing;
using model::LinkClass;
using model::OpClass;

namespace {

std::string bytes_of(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out += static_cast<char>(v);
  return out;
}

// The nodes of one exported file, by id, and its GlobalMetadata.
struct Decoded {
  ChakraProtoMsg::GlobalMetadata meta;
  std::map<std::uint64_t, ChakraProtoMsg::Node> nodes;
};

Decoded decode(const std::string& file) {
  Decoded out;
  const auto messages = interop::split_delimited(file, "test");
  REQUIRE(!messages.empty());
  REQUIRE(out.meta.ParseFromArray(messages[0].bytes.data(), static_cast<int>(messages[0].bytes.size())));
  for (std::size_t i = 1; i < messages.size(); ++i) {
    ChakraProtoMsg::Node n;
    REQUIRE(n.ParseFromArray(messages[i].bytes.data(), static_cast<int>(messages[i].bytes.size())));
    out.nodes[n.id()] = n;
  }
  return out;
}

const ChakraProtoMsg::AttributeProto* find_attr(const ChakraProtoMsg::Node& n, const std::string& name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

std::set<std::uint64_t> deps_of(const ChakraProtoMsg::Node& n) { return {n.data_deps().begin(), n.data_deps().end()}; }

// Two ranks, each with an in-order compute and comm stream:
//   t0 compute r0 1 ms; t1 compute r1 2 ms;
//   t2 allreduce over r0, r1 of 1000 bytes, 0.5 ms, after t0 and t1;
//   t3 compute r0 1 ms after t2; t4 compute r1 2 ms after t2;
//   t5 transfer of 64 bytes from r0 (its comm stream), 0.25 ms, after t3;
//   t6 compute r1 1 ms after t4 and t5.
// Engine by hand: t0 [0, 1], t1 [0, 2], t2 [2, 2.5], t3 [2.5, 3.5],
// t4 [2.5, 4.5], t5 [3.5, 3.75], t6 [4.5, 5.5]: 5.5 ms.
dag::TaskGraph two_rank_graph() {
  dag::TaskGraphBuilder b;
  const dag::ResourceId c0 = b.add_resource({"compute", 0}), m0 = b.add_resource({"comm", 0});
  const dag::ResourceId c1 = b.add_resource({"compute", 1}), m1 = b.add_resource({"comm", 1});
  auto task = [&](const char* name, dag::TaskKind kind, OpClass op, double size, double ms,
                  std::vector<dag::ResourceId> on) {
    dag::TaskSpec s;
    s.name = name;
    s.kind = kind;
    s.op = op;
    s.size = size;
    s.duration_ms = ms;
    s.resources = std::move(on);
    s.group_size = static_cast<std::int32_t>(s.resources.size());
    return b.add_task(s);
  };
  const auto compute = dag::TaskKind::Compute, comm = dag::TaskKind::Communication;
  const dag::TaskId t0 = task("f0", compute, OpClass::Gemm, 2e9, 1.0, {c0});
  const dag::TaskId t1 = task("f1", compute, OpClass::Attention, 4e9, 2.0, {c1});
  const dag::TaskId t2 = task("ar", comm, OpClass::AllReduce, 1000, 0.5, {m0, m1});
  const dag::TaskId t3 = task("g0", compute, OpClass::Gemm, 2e9, 1.0, {c0});
  const dag::TaskId t4 = task("g1", compute, OpClass::Gemm, 4e9, 2.0, {c1});
  const dag::TaskId t5 = task("send", comm, OpClass::P2P, 64, 0.25, {m0});
  const dag::TaskId t6 = task("h1", compute, OpClass::Gemm, 2e9, 1.0, {c1});
  for (auto [a, z] : {std::pair{t0, t2}, {t1, t2}, {t2, t3}, {t2, t4}, {t3, t5}, {t4, t6}, {t5, t6}})
    b.add_dependency(a, z);
  return std::move(b).build();
}

model::ClusterSpec one_node_of_two() {
  model::ClusterSpec c;
  c.name = "two";
  c.num_nodes = 1;
  c.gpus_per_node = 2;
  return c;
}

// Lines measured on the two GPUs of one node: allreduce 0.1 ms + 1e-6 ms per
// byte, p2p 0.05 ms + 1e-6 ms per byte, gemm 1 ms per 1e9 FLOPs.
cost::CostModel two_gpu_costs() {
  using moeplan::testing::cost_line;
  return cost::CostModel(model::CostProfileSpec{"p",
                                                "two",
                                                {cost_line(OpClass::Gemm, LinkClass::Local, 1, 0.0, 1e-9),
                                                 cost_line(OpClass::AllReduce, LinkClass::Intra, 2, 0.1, 1e-6),
                                                 cost_line(OpClass::P2P, LinkClass::Intra, 2, 0.05, 1e-6)},
                                                1.0});
}

ChakraInput input_of(const interop::ChakraExport& ex) {
  ChakraInput in;
  in.directory = "dir";
  for (std::size_t r = 0; r < ex.files.size(); ++r)
    in.files.push_back(
        {"dir/" + interop::chakra_file_name(static_cast<std::int32_t>(r)), static_cast<std::int32_t>(r), ex.files[r]});
  in.comm_groups_json = ex.comm_groups_json;
  in.comm_groups_path = "dir/comm_groups.json";
  return in;
}

std::string delimited(const google::protobuf::Message& m) {
  std::string bytes, out;
  m.SerializeToString(&bytes);
  interop::append_delimited(out, bytes);
  return out;
}

ChakraProtoMsg::Node node(std::uint64_t id, ChakraProtoMsg::NodeType type, std::uint64_t micros,
                          std::vector<std::uint64_t> deps = {}) {
  ChakraProtoMsg::Node n;
  n.set_id(id);
  n.set_name("n" + std::to_string(id));
  n.set_type(type);
  n.set_duration_micros(micros);
  for (std::uint64_t d : deps) n.add_data_deps(d);
  return n;
}

void add_int(ChakraProtoMsg::Node& n, const char* name, std::int64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}

// A one-file input of the given messages after a GlobalMetadata.
ChakraInput one_file(const std::vector<ChakraProtoMsg::Node>& nodes) {
  ChakraInput in;
  in.directory = "dir";
  std::string bytes = delimited(ChakraProtoMsg::GlobalMetadata());
  for (const auto& n : nodes) bytes += delimited(n);
  in.files.push_back({"dir/t.0.et", 0, bytes});
  in.comm_groups_path = "dir/comm_groups.json";
  return in;
}

// One file per rank, each of the given nodes after a GlobalMetadata.
ChakraInput rank_files(const std::vector<std::vector<ChakraProtoMsg::Node>>& ranks) {
  ChakraInput in;
  in.directory = "dir";
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::string bytes = delimited(ChakraProtoMsg::GlobalMetadata());
    for (const auto& n : ranks[r]) bytes += delimited(n);
    in.files.push_back({"dir/t." + std::to_string(r) + ".et", static_cast<std::int32_t>(r), bytes});
  }
  in.comm_groups_path = "dir/comm_groups.json";
  return in;
}

// A send (to `peer`) or a receive (from `peer`) of `bytes` with tag 0, as ASTRA-sim's examples write them.
ChakraProtoMsg::Node transfer(std::uint64_t id, bool send, std::int64_t peer, std::int64_t bytes, std::uint64_t micros,
                              std::vector<std::uint64_t> deps = {}) {
  auto n = node(id, send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE, micros, std::move(deps));
  add_int(n, send ? "comm_dst" : "comm_src", peer);
  add_int(n, "comm_size", bytes);
  add_int(n, "comm_tag", 0);
  return n;
}

ChakraProtoMsg::Node collective(std::uint64_t id, ChakraProtoMsg::CollectiveCommType type, std::int64_t bytes,
                                std::uint64_t micros, std::vector<std::uint64_t> deps = {}) {
  auto n = node(id, ChakraProtoMsg::COMM_COLL_NODE, micros, std::move(deps));
  add_int(n, "comm_type", type);
  add_int(n, "comm_size", bytes);
  return n;
}

std::string import_error(const ChakraInput& in, CommPricing comm = CommPricing::Trace) {
  try {
    interop::import_chakra(in, one_node_of_two(), two_gpu_costs(), comm);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Input);
    return format_error(e);
  }
  return "no error";
}

}  // namespace

TEST_CASE("interop varints and delimited messages, encoded by hand", "[interop]") {
  SECTION("varints: 7 bits a byte, least significant first, high bit = more") {
    auto varint = [](std::uint64_t v) {
      std::string s;
      interop::append_varint(s, v);
      return s;
    };
    CHECK(varint(0) == bytes_of({0x00}));
    CHECK(varint(127) == bytes_of({0x7F}));
    CHECK(varint(128) == bytes_of({0x80, 0x01}));
    // 300 = 0b10'0101100: 0101100 | 0x80 = 0xAC, then 0b10 = 0x02.
    CHECK(varint(300) == bytes_of({0xAC, 0x02}));
    // 2^64 - 1: nine bytes of 7 ones with the high bit, then the last 1.
    CHECK(varint(~std::uint64_t{0}) == bytes_of({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));
  }
  SECTION("a Node written by hand with Chakra's field numbers parses as the schema says") {
    // id = 1 (field 1, varint: tag 1 << 3 | 0 = 0x08), name = "a" (field 2,
    // length-delimited: tag 0x12, length 1, 'a'), type = COMP_NODE 4 (field 3:
    // tag 0x18), duration_micros = 300 (field 7: tag 0x38, 0xAC 0x02).
    const std::string node = bytes_of({0x08, 0x01, 0x12, 0x01, 'a', 0x18, 0x04, 0x38, 0xAC, 0x02});
    std::string stream;
    interop::append_delimited(stream, node);
    interop::append_delimited(stream, node);
    CHECK(stream.substr(0, 1) == bytes_of({0x0A}));  // 10 bytes follow
    const auto messages = interop::split_delimited(stream, "f");
    REQUIRE(messages.size() == 2);
    CHECK(messages[1].offset == 11);
    CHECK(std::string(messages[1].bytes) == node);
    ChakraProtoMsg::Node n;
    REQUIRE(n.ParseFromString(node));
    CHECK(n.id() == 1);
    CHECK(n.name() == "a");
    CHECK(n.type() == ChakraProtoMsg::COMP_NODE);
    CHECK(n.duration_micros() == 300);
    // And back: the generated class writes the same 10 bytes.
    CHECK(n.SerializeAsString() == node);
  }
  SECTION("cut or malformed prefixes are input errors naming the file and the byte") {
    auto error_of = [](const std::string& stream) {
      try {
        interop::split_delimited(stream, "dir/t.0.et");
      } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Input);
        return format_error(e);
      }
      return std::string("no error");
    };
    CHECK_THAT(error_of(bytes_of({0x01, 0x08, 0x80})),
               Catch::Contains("dir/t.0.et: message 2 at byte 2: the length prefix is cut short"));
    CHECK_THAT(error_of(bytes_of({0x05, 0x08, 0x01})), Catch::Contains("declares 5 bytes, but only 2 remain"));
    CHECK_THAT(error_of(std::string(10, '\xFF') + bytes_of({0x01})), Catch::Contains("does not fit in 64 bits"));
  }
}

TEST_CASE("interop::export_chakra writes each task into the files of its ranks", "[interop]") {
  const dag::TaskGraph g = two_rank_graph();
  const sim::Timeline tl = sim::simulate(g);
  REQUIRE(tl.makespan_ms == Approx(5.5));
  const interop::ChakraExport ex = interop::export_chakra(g, tl, {"s", "x", {}, 2});
  REQUIRE(ex.files.size() == 2);
  const Decoded r0 = decode(ex.files[0]), r1 = decode(ex.files[1]);
  // Rank 0 runs t0, t2, t3 and sends t5; rank 1 runs t1, t2, t4, t6 and receives t5.
  CHECK(r0.nodes.size() == 4);
  CHECK(r1.nodes.size() == 5);
  CHECK(ex.compute_nodes == 5);
  CHECK(ex.collective_nodes == 2);
  CHECK(ex.send_nodes == 1);
  CHECK(ex.recv_nodes == 1);
  SECTION("compute: COMP_NODE, whole microseconds, FLOPs as num_ops, the exact time beside them") {
    const auto& t0 = r0.nodes.at(0);
    CHECK(t0.type() == ChakraProtoMsg::COMP_NODE);
    CHECK(t0.duration_micros() == 1000);
    CHECK(t0.start_time_micros() == 0);
    CHECK(find_attr(t0, "num_ops")->int64_val() == 2000000000);
    CHECK(find_attr(t0, "moeplan_duration_ms")->double_val() == 1.0);
    CHECK(find_attr(t0, "is_cpu_op")->bool_val() == false);
    CHECK(find_attr(r1.nodes.at(1), "moeplan_op")->string_val() == "attention");
  }
  SECTION("the collective: one node id in both files, comm_type ALL_REDUCE 0, its group in comm_groups.json") {
    for (const Decoded* r : {&r0, &r1}) {
      const auto& t2 = r->nodes.at(2);
      CHECK(t2.type() == ChakraProtoMsg::COMM_COLL_NODE);
      CHECK(find_attr(t2, "comm_type")->int64_val() == 0);
      CHECK(find_attr(t2, "comm_size")->int64_val() == 1000);
      CHECK(find_attr(t2, "pg_name")->string_val() == "1");
      CHECK(t2.start_time_micros() == 2000);  // it waits for t1, which ends at 2 ms
    }
    const io::Json groups = io::Json::parse(ex.comm_groups_json);
    REQUIRE(groups.as_object().size() == 1);
    CHECK(groups.as_object()[0].first == "1");
    CHECK(groups.as_object()[0].second.dump(0) == "[0,1]");
  }
  SECTION("dependencies: the file's own, and the task before on each in-order stream") {
    CHECK(deps_of(r0.nodes.at(2)) == std::set<std::uint64_t>{0});
    CHECK(deps_of(r1.nodes.at(2)) == std::set<std::uint64_t>{1});
    CHECK(deps_of(r0.nodes.at(3)) == std::set<std::uint64_t>{0, 2});  // t0: before it on compute
    CHECK(deps_of(r0.nodes.at(5)) == std::set<std::uint64_t>{2, 3});  // t2: before it on comm
    CHECK(deps_of(r1.nodes.at(6)) == std::set<std::uint64_t>{4, 5});  // the receive of t5
  }
  SECTION("the transfer: a send in the sender's file, a receive where it is waited for, tagged by task id") {
    const auto& send = r0.nodes.at(5);
    const auto& recv = r1.nodes.at(5);
    CHECK(send.type() == ChakraProtoMsg::COMM_SEND_NODE);
    CHECK(recv.type() == ChakraProtoMsg::COMM_RECV_NODE);
    for (const auto* n : {&send, &recv}) {
      CHECK(find_attr(*n, "comm_src")->int32_val() == 0);
      CHECK(find_attr(*n, "comm_dst")->int32_val() == 1);
      CHECK(find_attr(*n, "comm_tag")->int32_val() == 5);
      CHECK(find_attr(*n, "comm_size")->int64_val() == 64);
    }
    CHECK(find_attr(recv, "stream") == nullptr);  // the transfer runs on the sender's stream
  }
}

TEST_CASE("interop::import_chakra rebuilds the graph the engine runs", "[interop]") {
  const dag::TaskGraph g = two_rank_graph();
  const sim::Timeline tl = sim::simulate(g);
  const ChakraInput in = input_of(interop::export_chakra(g, tl, {"s", "x", {}, 2}));
  SECTION("with the trace's times: the same graph, the same 5.5 ms") {
    const interop::ChakraImport im = interop::import_chakra(in, one_node_of_two(), two_gpu_costs(), CommPricing::Trace);
    CHECK(im.built.graph.size() == g.size());
    CHECK(im.ranks == 2);
    CHECK(im.collectives == 1);
    CHECK(im.transfers == 1);
    CHECK(im.priced_by_model == 0);
    const sim::Timeline back = sim::simulate(im.built.graph);
    CHECK(back.makespan_ms == tl.makespan_ms);
    for (dag::TaskId t = 0; t < g.size(); ++t) CHECK(back.end_ms[t] == tl.end_ms[t]);
  }
  SECTION("with the cost model: the allreduce and the transfer priced again") {
    // allreduce: 0.1 + 1000 x 1e-6 = 0.101 ms on [2, 2.101]; t3 [2.101, 3.101],
    // t4 [2.101, 4.101]; transfer 0.05 + 64e-6 ms from 3.101; t6 [4.101, 5.101].
    const interop::ChakraImport im = interop::import_chakra(in, one_node_of_two(), two_gpu_costs(), CommPricing::Model);
    CHECK(im.priced_by_model == 2);
    const sim::Timeline back = sim::simulate(im.built.graph);
    CHECK(back.end_ms[2] == Approx(2.101).epsilon(1e-12));
    CHECK(back.end_ms[5] == Approx(3.101 + 0.050064).epsilon(1e-12));
    CHECK(back.makespan_ms == Approx(5.101).epsilon(1e-12));
  }
}

TEST_CASE("interop::import_chakra reads a trace without moeplan's attributes as ASTRA-sim issues it", "[interop]") {
  // Rank 0 alone (pg_name "" is every rank): a 3 us and a 2 us compute node,
  // both free to start, a METADATA node after the first, and an allreduce of
  // 1000 bytes after the METADATA node. Without streams, the compute nodes
  // share one pool that takes the lowest ready id first: node 1 [0, 3 us],
  // node 2 [3, 5 us]; the allreduce waits, through node 3, for node 1 only:
  // trace time 4 us from 3 us, on the comm pool beside node 2: ends at 7 us.
  auto n1 = node(1, ChakraProtoMsg::COMP_NODE, 3);
  auto n2 = node(2, ChakraProtoMsg::COMP_NODE, 2);
  auto n3 = node(3, ChakraProtoMsg::METADATA_NODE, 0, {1});
  auto n4 = node(4, ChakraProtoMsg::COMM_COLL_NODE, 4, {3});
  add_int(n4, "comm_type", ChakraProtoMsg::ALL_REDUCE);
  add_int(n4, "comm_size", 1000);
  const interop::ChakraImport im =
      interop::import_chakra(one_file({n2, n4, n1, n3}), one_node_of_two(), two_gpu_costs(), CommPricing::Trace);
  REQUIRE(im.built.graph.size() == 3);
  const sim::Timeline tl = sim::simulate(im.built.graph);
  CHECK(tl.start_ms[0] == 0);  // node 1, the lowest id
  CHECK(tl.end_ms[1] == Approx(0.005));
  CHECK(tl.makespan_ms == Approx(0.007));
  CHECK(im.built.graph.resources().size() == 2);
  CHECK(im.built.graph.resources()[0].policy == dag::DispatchPolicy::Priority);
}

TEST_CASE("interop::import_chakra refuses bad traces, naming the file and the reason", "[interop]") {
  SECTION("a second GlobalMetadata where a Node belongs") {
    ChakraInput in = one_file({});
    in.files[0].bytes += delimited(ChakraProtoMsg::GlobalMetadata());
    ChakraProtoMsg::GlobalMetadata meta;
    meta.set_version("0.0.4");
    in.files[0].bytes += delimited(meta);
    CHECK_THAT(import_error(in), Catch::Contains("dir/t.0.et: message 3 at byte 2: not a ChakraProtoMsg.Node"));
  }
  SECTION("node types") {
    CHECK_THAT(import_error(one_file({node(1, static_cast<ChakraProtoMsg::NodeType>(42), 1)})),
               Catch::Contains("dir/t.0.et: node 1 ('n1'): unknown node type 42"));
    CHECK_THAT(import_error(one_file({node(1, ChakraProtoMsg::MEM_LOAD_NODE, 1)})),
               Catch::Contains("node type MEM_LOAD_NODE (2) is not one moeplan simulates"));
  }
  SECTION("dependencies") {
    CHECK_THAT(import_error(one_file({node(1, ChakraProtoMsg::COMP_NODE, 1, {99})})),
               Catch::Contains("node 1 ('n1'): depends on node 99, which the file does not hold"));
    CHECK_THAT(
        import_error(one_file({node(1, ChakraProtoMsg::COMP_NODE, 1, {2}), node(2, ChakraProtoMsg::COMP_NODE, 1, {1}),
                               node(3, ChakraProtoMsg::COMP_NODE, 1, {2})})),
        Catch::Contains("lies on a dependency cycle"));
  }
  SECTION("a collective moeplan does not run") {
    auto n = node(1, ChakraProtoMsg::COMM_COLL_NODE, 1);
    add_int(n, "comm_type", ChakraProtoMsg::REDUCE);
    add_int(n, "comm_size", 8);
    CHECK_THAT(import_error(one_file({n})),
               Catch::Contains("node 1 ('n1'): comm_type 1 (REDUCE) is not a collective moeplan simulates (ALL_REDUCE "
                               "0, ALL_GATHER 2, BROADCAST 5, ALL_TO_ALL 6, REDUCE_SCATTER 7, BARRIER 9)"));
  }
  SECTION("a representative trace under the cost model") {
    // As moeplan wrote symmetric and pipeline-stage graphs before issue 29.
    ChakraProtoMsg::GlobalMetadata meta;
    auto* a = meta.add_attr();
    a->set_name("moeplan_representative");
    a->set_bool_val(true);
    ChakraInput in = one_file({node(1, ChakraProtoMsg::COMP_NODE, 10)});
    in.files[0].bytes = delimited(meta) + delimited(node(1, ChakraProtoMsg::COMP_NODE, 10));
    CHECK_THAT(import_error(in, CommPricing::Model), Catch::Contains("dir/t.0.et: is a representative trace"));
  }
}

TEST_CASE("interop::import_chakra passes dependencies through METADATA and INVALID nodes in linear work", "[interop]") {
  using Kind = ChakraProtoMsg::NodeType;
  SECTION("a chain of 50,000 of them and 50,000 dependents (issue 28: walked once per dependent, minutes)") {
    // Node 0 computes 10 us; nodes 1..50000 alternate METADATA and INVALID,
    // each after the one before (node 1 after node 0); nodes 50001..100000
    // compute 1 us each, after node 50000. Each dependent waits, through the
    // chain, for node 0 alone. The work counted: node 1 takes node 0 (1);
    // nodes 2..50000 wait for one pass-through node each and share its set
    // (0); each dependent takes that set of one (50000): 50001 in all, where
    // walking the chain per dependent took 50000 x 50000.
    constexpr std::uint64_t kChain = 50000, kDependents = 50000;
    std::vector<ChakraProtoMsg::Node> nodes{node(0, ChakraProtoMsg::COMP_NODE, 10)};
    for (std::uint64_t k = 1; k <= kChain; ++k)
      nodes.push_back(node(k, k % 2 == 1 ? Kind::METADATA_NODE : Kind::INVALID_NODE, 0, {k - 1}));
    for (std::uint64_t k = 1; k <= kDependents; ++k)
      nodes.push_back(node(kChain + k, ChakraProtoMsg::COMP_NODE, 1, {kChain}));
    const ChakraInput in = one_file(nodes);
    interop::detail::ImportCounts counts;
    const interop::detail::ParsedFile f = interop::detail::parse_chakra_file(in.files[0], counts);
    CHECK(counts.dependencies == kChain + kDependents);
    CHECK(counts.resolved_dependencies == 1 + kDependents);
    bool all_on_node_0 = true;
    for (std::uint64_t k = 1; k <= kDependents; ++k)
      all_on_node_0 = all_on_node_0 && f.deps[kChain + k] == std::vector<std::size_t>{0};
    CHECK(all_on_node_0);
    CHECK(f.deps[kChain].empty());  // a pass-through node has no task, so no dependencies of its own
    // One compute pool (no streams): 10 us, then the 50000 dependents one after another:
    // 10 + 50000 x 1 us = 50.01 ms, 50001 tasks.
    const interop::ChakraImport im = interop::import_chakra(in, one_node_of_two(), two_gpu_costs(), CommPricing::Trace);
    CHECK(im.built.graph.size() == 1 + kDependents);
    CHECK(sim::simulate(im.built.graph).makespan_ms == Approx(50.01).epsilon(1e-9));  // 50000 sums of 0.001
  }
  SECTION("sets joined, each real node once (by hand)") {
    // A (1) and B (3) compute; M (2) waits for A; N (4) for M and B;
    // C (5) for N; D (6) for M and N. C waits for {A, B}; D for {A, B}, A once.
    // Work: M takes A (1); N takes M's set and B (2); C takes N's set (2);
    // D takes M's (1) and N's (2): 8.
    const ChakraInput in =
        one_file({node(1, ChakraProtoMsg::COMP_NODE, 1), node(2, Kind::METADATA_NODE, 0, {1}),
                  node(3, ChakraProtoMsg::COMP_NODE, 1), node(4, Kind::INVALID_NODE, 0, {2, 3}),
                  node(5, ChakraProtoMsg::COMP_NODE, 1, {4}), node(6, ChakraProtoMsg::COMP_NODE, 1, {2, 4})});
    interop::detail::ImportCounts counts;
    const interop::detail::ParsedFile f = interop::detail::parse_chakra_file(in.files[0], counts);
    // Indices by id order: A 0, M 1, B 2, N 3, C 4, D 5.
    CHECK(f.deps[4] == std::vector<std::size_t>{0, 2});
    CHECK(f.deps[5] == std::vector<std::size_t>{0, 2});
    CHECK(counts.resolved_dependencies == 8);
  }
}

TEST_CASE("interop::import_chakra refuses a trace past its bounds before holding what it counts", "[interop]") {
  SECTION("nodes: counted over the files, before any is read") {
    // The same 3-byte message over and over (length 2, then id 1): the count
    // comes first, so no node is made and the repeated id is never met.
    const std::string one = bytes_of({0x02, 0x08, 0x01});
    ChakraInput in = one_file({});
    std::string& bytes = in.files[0].bytes;
    for (std::size_t k = 0; k <= interop::kMaxChakraNodes; ++k) bytes += one;
    CHECK(import_error(in) ==
          "dir/t.0.et: holds 2097153 nodes, more than 2097152, the limit of one import (all its files together)");
    // Rank 0 with 1048576 nodes, rank 1 with 1048577: together one past the bound, refused at rank 1.
    bytes.resize(1 + 3 * (std::size_t{1} << 20));
    const std::string half = bytes;
    in.files.push_back({"dir/t.1.et", 1, half + one});
    CHECK(import_error(in) ==
          "dir/t.1.et: holds 1048577 nodes and the files before it 1048576, more than 2097152, "
          "the limit of one import (all its files together)");
    in.files[1].bytes = half;  // 2 x 1048576: at the bound, counted whole
    CHECK(interop::detail::count_chakra_nodes(in.files) == interop::kMaxChakraNodes);
  }
  SECTION("dependencies as written: counted node by node") {
    // After files with 8388607 of them, node 2's two dependencies make 8388609.
    const ChakraInput in =
        one_file({node(1, ChakraProtoMsg::COMP_NODE, 1), node(2, ChakraProtoMsg::COMP_NODE, 1, {1, 1})});
    interop::detail::ImportCounts counts;
    counts.dependencies = interop::kMaxChakraDependencies - 1;
    CHECK_THROWS_WITH(interop::detail::parse_chakra_file(in.files[0], counts),
                      Catch::StartsWith("message 3 at byte ") &&
                          Catch::EndsWith(": node 2 brings the dependencies (data_deps and ctrl_deps) of the trace's "
                                          "files to more than 8388608, the limit of one import"));
  }
  SECTION("dependencies passed through METADATA nodes: 2900 nodes, one METADATA node, 2900 dependents") {
    // Nodes 0..2899 compute; node 2900 (METADATA) waits for all of them; nodes
    // 2901..5800 wait for node 2900, so each for 2900 nodes: 2900 x 2900 =
    // 8410000 dependencies, past 8388608. Counted in dependency order: node
    // 2900 takes 2900, each dependent 2900 more; after j dependents
    // 2900 x (1 + j), past the bound first at j = 2892 (8389700; j = 2891
    // gives 8386800): node 2900 + 2892 = 5792, refused before it takes its set.
    std::vector<ChakraProtoMsg::Node> nodes;
    std::vector<std::uint64_t> all;
    for (std::uint64_t k = 0; k < 2900; ++k) {
      nodes.push_back(node(k, ChakraProtoMsg::COMP_NODE, 1));
      all.push_back(k);
    }
    nodes.push_back(node(2900, ChakraProtoMsg::METADATA_NODE, 0, all));
    for (std::uint64_t k = 2901; k <= 5800; ++k) nodes.push_back(node(k, ChakraProtoMsg::COMP_NODE, 1, {2900}));
    CHECK(import_error(one_file(nodes)) ==
          "dir/t.0.et: node 5792 ('n5792'): brings the dependencies of the trace's files, once METADATA and INVALID "
          "nodes are passed through (a node that waits for one waits for all it waits for), to more than 8388608, "
          "the limit of one import");
  }
  SECTION("groups of comm_groups.json") {
    // 262145 groups of rank 0: {"g0":[0],"g1":[0],...}, 3 values each.
    ChakraInput in = one_file({node(1, ChakraProtoMsg::COMP_NODE, 1)});
    std::string json = "{";
    for (std::size_t k = 0; k <= interop::kMaxChakraGroups; ++k)
      json += (k > 0 ? ",\"g" : "\"g") + std::to_string(k) + "\":[0]";
    in.comm_groups_json = json + "}";
    CHECK(import_error(in) == "dir/comm_groups.json: holds 262145 groups, more than 262144, the limit of one import");
  }
}

TEST_CASE("interop::import_chakra runs a send and its receive as ASTRA-sim does", "[interop]") {
  // Rank 0 sends 100 bytes to rank 1 in 10 us (node 1), then computes 1 us
  // after it (node 2). Rank 1 computes A us (node 1), posts the receive after
  // it (node 2) and computes 1 us after the receive (node 3). ASTRA-sim
  // (518bd51 CommonNetworkApi.cc process_chunk_arrival, sim_recv): the send
  // ends when its message arrives, 10 us, posted or not; the receive ends at
  // max(arrival 10 us, posted at A us). The receive is no task. Task ids in
  // issue order (the lowest node id first, the lower rank on ties): 0 rank
  // 0's send, 1 rank 1's A, 2 rank 0's compute, 3 rank 1's last compute.
  auto ranks = [](std::uint64_t a_micros) {
    return rank_files({{transfer(1, true, 1, 100, 10), node(2, ChakraProtoMsg::COMP_NODE, 1, {1})},
                       {node(1, ChakraProtoMsg::COMP_NODE, a_micros), transfer(2, false, 0, 100, 0, {1}),
                        node(3, ChakraProtoMsg::COMP_NODE, 1, {2})}});
  };
  auto run = [](const ChakraInput& in) {
    const interop::ChakraImport im = interop::import_chakra(in, one_node_of_two(), two_gpu_costs(), CommPricing::Trace);
    REQUIRE(im.built.graph.size() == 4);
    CHECK(im.transfers == 1);
    return sim::simulate(im.built.graph);
  };
  SECTION("posted before the message arrives (A = 4 us): it ends at the arrival, 10 us") {
    const sim::Timeline tl = run(ranks(4));
    CHECK(tl.end_ms[0] == Approx(0.010));    // the send
    CHECK(tl.start_ms[3] == Approx(0.010));  // after the receive: max(10, 4)
    CHECK(tl.makespan_ms == Approx(0.011));
  }
  SECTION("posted after the message arrived (A = 25 us): it ends when posted, 25 us; the sender did not wait") {
    const sim::Timeline tl = run(ranks(25));
    CHECK(tl.end_ms[0] == Approx(0.010));    // the send: its arrival, not the receive's 25 us
    CHECK(tl.start_ms[2] == Approx(0.010));  // rank 0 goes on at once
    CHECK(tl.start_ms[3] == Approx(0.025));  // max(10, 25)
    CHECK(tl.makespan_ms == Approx(0.026));
  }
  SECTION("the cost model prices the send on the pair's p2p line") {
    // p2p 0.05 ms + 100 x 1e-6 = 0.0501 ms; A = 4 us: rank 1 computes 1 us after it.
    const interop::ChakraImport im =
        interop::import_chakra(ranks(4), one_node_of_two(), two_gpu_costs(), CommPricing::Model);
    CHECK(im.priced_by_model == 1);
    CHECK(sim::simulate(im.built.graph).makespan_ms == Approx(0.0511).epsilon(1e-12));
  }
}

TEST_CASE("interop::import_chakra runs two ranks that each send, then receive", "[interop]") {
  // Each rank sends 4096 bytes to the other (node 0), receives the other's
  // (node 1, after its own send) and computes 5 us after that (node 2).
  // Merged into one task, a send and its receive made a cycle (rank 0's send
  // = rank 1's receive, after rank 1's send = rank 0's receive, after rank 0's send).
  auto exchange = [](std::int64_t peer, std::uint64_t send_micros) {
    return std::vector<ChakraProtoMsg::Node>{transfer(0, true, peer, 4096, send_micros),
                                             transfer(1, false, peer, 4096, 0, {0}),
                                             node(2, ChakraProtoMsg::COMP_NODE, 5, {1})};
  };
  const ChakraInput in = rank_files({exchange(1, 3), exchange(0, 7)});
  SECTION("trace times: sends of 3 and 7 us; each receive ends at 7 us, each rank at 7 + 5 = 12 us") {
    const interop::ChakraImport im = interop::import_chakra(in, one_node_of_two(), two_gpu_costs(), CommPricing::Trace);
    CHECK(im.built.graph.size() == 4);  // two sends, two computes
    CHECK(sim::simulate(im.built.graph).makespan_ms == Approx(0.012));
  }
  SECTION("the cost model: both sends 0.05 + 4096 x 1e-6 = 0.054096 ms, then 5 us") {
    const interop::ChakraImport im = interop::import_chakra(in, one_node_of_two(), two_gpu_costs(), CommPricing::Model);
    CHECK(sim::simulate(im.built.graph).makespan_ms == Approx(0.059096).epsilon(1e-12));
  }
}

TEST_CASE("interop::import_chakra keeps a receive's place on its in-order stream", "[interop]") {
  // Rank 0 sends 64 bytes in 10 us. Rank 1 receives it (node 1) and computes
  // 1 us (node 2, no dependency). On one CUDA stream (7) the compute comes
  // after the receive in the stream's order: it starts at 10 us. Without a
  // stream on the receive it holds nothing: the compute starts at 0.
  auto recv = transfer(1, false, 0, 64, 0);
  auto work = node(2, ChakraProtoMsg::COMP_NODE, 1);
  add_int(work, "stream", 7);
  SECTION("on the stream") {
    auto on_stream = recv;
    add_int(on_stream, "stream", 7);
    const interop::ChakraImport im =
        interop::import_chakra(rank_files({{transfer(1, true, 1, 64, 10)}, {on_stream, work}}), one_node_of_two(),
                               two_gpu_costs(), CommPricing::Trace);
    const sim::Timeline tl = sim::simulate(im.built.graph);
    CHECK(tl.start_ms[1] == Approx(0.010));
    CHECK(tl.makespan_ms == Approx(0.011));
  }
  SECTION("without a stream") {
    const interop::ChakraImport im = interop::import_chakra(rank_files({{transfer(1, true, 1, 64, 10)}, {recv, work}}),
                                                            one_node_of_two(), two_gpu_costs(), CommPricing::Trace);
    CHECK(sim::simulate(im.built.graph).start_ms[1] == 0.0);
  }
  SECTION("a task before the receive on its stream that waits for it: a cycle, named") {
    // Node 1 computes on stream 7 after node 2, the receive after it on stream 7.
    auto first = node(1, ChakraProtoMsg::COMP_NODE, 1, {2});
    add_int(first, "stream", 7);
    auto late = transfer(2, false, 0, 64, 0);
    add_int(late, "stream", 7);
    CHECK_THAT(import_error(rank_files({{transfer(1, true, 1, 64, 10)}, {first, late}})),
               Catch::Contains("dir/t.1.et: node 1 ('n1'): lies on a dependency cycle through the receive node 2 "
                               "('n2')"));
  }
  SECTION("a send and a receive of other sizes do not match (ASTRA-sim matches on the size too)") {
    CHECK_THAT(import_error(rank_files({{transfer(1, true, 1, 64, 10)}, {transfer(1, false, 0, 128, 0)}})),
               Catch::Contains("dir/t.0.et: node 1 ('n1'): has no matching COMM_RECV_NODE in dir/t.1.et (source 0, "
                               "destination 1, tag 0, 64 bytes; they match in order)"));
  }
}

TEST_CASE("interop::import_chakra runs BROADCAST and BARRIER and reads an ALL_GATHER's comm_size per rank",
          "[interop]") {
  // Two ranks on one node. Lines: allreduce 0.1 ms + 1e-6 ms per byte, all-gather 0.02 ms + 1e-6 ms per byte of output.
  using moeplan::testing::cost_line;
  const cost::CostModel costs(model::CostProfileSpec{"p",
                                                     "two",
                                                     {cost_line(OpClass::AllReduce, LinkClass::Intra, 2, 0.1, 1e-6),
                                                      cost_line(OpClass::AllGather, LinkClass::Intra, 2, 0.02, 1e-6)},
                                                     1.0});
  SECTION("a broadcast of 1000 bytes (rank 0 saw 30 us, rank 1 20 us), then a barrier (2 us)") {
    auto ranks = [](std::uint64_t broadcast_micros) {
      return std::vector<ChakraProtoMsg::Node>{collective(1, ChakraProtoMsg::BROADCAST, 1000, broadcast_micros),
                                               collective(2, ChakraProtoMsg::BARRIER, 0, 2, {1})};
    };
    const ChakraInput in = rank_files({ranks(30), ranks(20)});
    // Trace: the slower member's 30 us, then 2 us.
    const interop::ChakraImport traced = interop::import_chakra(in, one_node_of_two(), costs, CommPricing::Trace);
    CHECK(traced.collectives == 2);
    CHECK(sim::simulate(traced.built.graph).makespan_ms == Approx(0.032));
    // Cost model: the broadcast as an all-gather of 1000 x 2/1 = 2000 bytes of
    // output, 0.02 + 0.002 = 0.022 ms; the barrier as an allreduce of its
    // comm_size, 0 bytes: 0.1 ms. 0.122 ms.
    const interop::ChakraImport priced = interop::import_chakra(in, one_node_of_two(), costs, CommPricing::Model);
    CHECK(priced.priced_by_model == 2);
    CHECK(sim::simulate(priced.built.graph).makespan_ms == Approx(0.122).epsilon(1e-12));
  }
  SECTION("an all-gather's comm_size is each rank's input; moeplan_comm_bytes is its output") {
    // comm_size 1000 on each of 2 ranks: 2000 bytes of output, 0.022 ms.
    const ChakraInput astra = rank_files(
        {{collective(1, ChakraProtoMsg::ALL_GATHER, 1000, 0)}, {collective(1, ChakraProtoMsg::ALL_GATHER, 1000, 0)}});
    const interop::ChakraImport by_input = interop::import_chakra(astra, one_node_of_two(), costs, CommPricing::Model);
    CHECK(by_input.built.graph.size(0) == 2000.0);
    CHECK(sim::simulate(by_input.built.graph).makespan_ms == Approx(0.022).epsilon(1e-12));
    // moeplan_comm_bytes 1000 beside it: 1000 bytes of output, 0.021 ms.
    auto exact = collective(1, ChakraProtoMsg::ALL_GATHER, 1000, 0);
    auto* a = exact.add_attr();
    a->set_name("moeplan_comm_bytes");
    a->set_double_val(1000.0);
    const interop::ChakraImport by_output =
        interop::import_chakra(rank_files({{exact}, {exact}}), one_node_of_two(), costs, CommPricing::Model);
    CHECK(sim::simulate(by_output.built.graph).makespan_ms == Approx(0.021).epsilon(1e-12));
  }
}

// Issue 29: what ASTRA-sim reads from an export.
TEST_CASE("interop::export_chakra writes an all-gather's comm_size as each rank's input, as ASTRA-sim reads it", "[interop]") {
  // Three ranks, one stream each: an all-gather whose output (nccl-tests'
  // size, what the cost model priced) is 3,000 bytes, and a reduce-scatter of
  // a 3,000-byte input. ASTRA-sim's Ring reads ALL_GATHER comm_size as each
  // rank's input (final = size x 3), REDUCE_SCATTER's as the input:
  // 3,000 / 3 = 1,000 and 3,000. A 1,000-byte output over 3 ranks is 333.33
  // bytes each: comm_size 333 (rounded), and the priced 1,000 beside it.
  dag::TaskGraphBuilder b;
  std::vector<dag::ResourceId> on;
  for (std::int32_t r = 0; r < 3; ++r) on.push_back(b.add_resource({"comm", r}));
  auto collective = [&](const char* name, OpClass op, double bytes) {
    dag::TaskSpec s;
    s.name = name;
    s.kind = dag::TaskKind::Communication;
    s.op = op;
    s.size = bytes;
    s.duration_ms = 1;
    s.resources = on;
    s.group_size = 3;
    return b.add_task(s);
  };
  collective("ag", OpClass::AllGather, 3000);
  collective("rs", OpClass::ReduceScatter, 3000);
  collective("ag-odd", OpClass::AllGather, 1000);
  const dag::TaskGraph g = std::move(b).build();
  const interop::ChakraExport ex = interop::export_chakra(g, sim::simulate(g), {"s", "x", {}, 2});
  REQUIRE(ex.files.size() == 3);
  for (const std::string& file : ex.files) {
    const Decoded d = decode(file);
    CHECK(find_attr(d.nodes.at(0), "comm_size")->int64_val() == 1000);
    CHECK(find_attr(d.nodes.at(0), "moeplan_comm_bytes") == nullptr);  // 1,000 x 3 gives the 3,000 back
    CHECK(find_attr(d.nodes.at(1), "comm_size")->int64_val() == 3000);
    CHECK(find_attr(d.nodes.at(1), "moeplan_comm_bytes") == nullptr);
    CHECK(find_attr(d.nodes.at(2), "comm_size")->int64_val() == 333);
    CHECK(find_attr(d.nodes.at(2), "moeplan_comm_bytes")->double_val() == 1000.0);
  }
}

TEST_CASE("interop::export_chakra writes tensor_size from a compute task's work shape", "[interop]") {
  // One GEMM task of two 64 x 32 x 16 GEMMs (C[m x n] = A[m x k] B[k x n]) in
  // BF16: each moves A 64 x 16 + B 16 x 32 + C 64 x 32 elements = 1,024 +
  // 512 + 2,048 = 3,584, twice: 7,168 elements x 2 bytes = 14,336 bytes;
  // 2 x 2 x 64 x 32 x 16 = 131,072 FLOPs. The same shape as an FP8 GEMM reads
  // its A and B at 1 byte: 2 x (1,536 x 1 + 2,048 x 2) = 11,264 bytes. An
  // elementwise task is priced by its 4,096 bytes: they are its tensor_size.
  dag::TaskGraphBuilder b;
  const dag::ResourceId c = b.add_resource({"compute", 0});
  dag::WorkShape work;
  work.gemms.push_back({64, 32, 16, 2});
  auto task = [&](const char* name, OpClass op, double size, const dag::WorkShape* shape) {
    dag::TaskSpec s;
    s.name = name;
    s.op = op;
    s.size = size;
    s.duration_ms = 1;
    s.resources = {c};
    s.work = shape;
    return b.add_task(s);
  };
  task("gemm", OpClass::Gemm, 131072, &work);
  task("fp8", OpClass::GemmFp8, 131072, &work);
  task("cast", OpClass::Elementwise, 4096, nullptr);
  const dag::TaskGraph g = std::move(b).build();
  const Decoded d = decode(interop::export_chakra(g, sim::simulate(g), {"s", "x", {}, 2}).files.at(0));
  CHECK(find_attr(d.nodes.at(0), "tensor_size")->uint64_val() == 14336);
  CHECK(find_attr(d.nodes.at(0), "num_ops")->int64_val() == 131072);
  CHECK(find_attr(d.nodes.at(1), "tensor_size")->uint64_val() == 11264);
  CHECK(find_attr(d.nodes.at(2), "tensor_size")->uint64_val() == 4096);
  // Its size is bytes, not FLOPs: one operation per 2-byte element, 2,048.
  CHECK(find_attr(d.nodes.at(2), "num_ops")->int64_val() == 2048);
}

TEST_CASE("interop::export_chakra refuses a graph whose ranks stand for others", "[interop]") {
  // Rank 0 alone holds an all-reduce priced for 8 ranks (symmetric mode):
  // ASTRA-sim would wait for the files of the other 7.
  dag::TaskGraphBuilder b;
  dag::TaskSpec s;
  s.name = "ar";
  s.kind = dag::TaskKind::Communication;
  s.op = OpClass::AllReduce;
  s.size = 1024;
  s.duration_ms = 1;
  s.resources = {b.add_resource({"comm", 0})};
  s.group_size = 8;
  b.add_task(s);
  const dag::TaskGraph g = std::move(b).build();
  CHECK_THROWS_WITH(interop::export_chakra(g, sim::simulate(g), {"s", "x", {}, 2}),
                    Catch::Contains("a collective priced for 8 ranks holds the streams of 1"));
}

TEST_CASE("interop::export_chakra hands each rank's file to the sink in rank order, after begin", "[interop]") {
  // The streamed files are the in-memory ones, and begin() comes first with the rank count.
  struct Recorder final : interop::ChakraFileSink {
    std::vector<std::string> events;
    std::vector<std::string> files;
    void begin(std::int32_t ranks) override { events.push_back("begin " + std::to_string(ranks)); }
    void file(std::int32_t rank, std::string_view bytes) override {
      events.push_back("file " + std::to_string(rank));
      files.emplace_back(bytes);
    }
  } sink;
  const dag::TaskGraph g = two_rank_graph();
  const sim::Timeline tl = sim::simulate(g);
  const interop::ChakraExport streamed = interop::export_chakra(g, tl, {"s", "x", {}, 2}, sink);
  CHECK(sink.events == std::vector<std::string>{"begin 2", "file 0", "file 1"});
  CHECK(streamed.files.empty());
  CHECK(streamed.ranks == 2);
  CHECK(sink.files == interop::export_chakra(g, tl, {"s", "x", {}, 2}).files);
}
