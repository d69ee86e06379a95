#pragma once
// Private to src/interop: one Chakra trace file read into plain structs, with
// every per-file check done (framing, message types, node types, attribute
// types, dependencies on nodes the file holds, cycles). What crosses files
// (collectives, transfers, groups) is chakra_import.cpp's.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/interop/chakra.hpp>

namespace moeplan::interop::detail {

/// @brief What moeplan makes of a Chakra node type.
enum class NodeKind : std::uint8_t {
  Compute,     ///< COMP_NODE
  Collective,  ///< COMM_COLL_NODE
  Send,        ///< COMM_SEND_NODE
  Recv,        ///< COMM_RECV_NODE
  PassThrough  ///< METADATA_NODE, INVALID_NODE: no work; dependencies pass through
};

/// @brief One node, its attributes decoded.
struct ParsedNode {
  std::uint64_t id = 0;
  std::string name;
  NodeKind kind = NodeKind::Compute;
  std::vector<std::uint64_t> deps;  ///< data_deps and ctrl_deps, as written
  std::optional<std::int64_t> stream;
  bool cpu = false;                   ///< is_cpu_op
  std::optional<double> duration_ms;  ///< moeplan_duration_ms
  std::uint64_t duration_micros = 0;
  double num_ops = 0;
  std::optional<std::int64_t> comm_type;  ///< CollectiveCommType value
  double comm_bytes = 0;                  ///< moeplan_comm_bytes, else comm_size
  /// comm_bytes is moeplan_comm_bytes: the size in nccl-tests' convention, as
  /// the cost model takes it; comm_size is in ASTRA-sim's (an all-gather's
  /// input of one rank).
  bool comm_bytes_exact = false;
  std::string pg_name;
  std::optional<std::int64_t> comm_src, comm_dst, comm_tag;
  std::int32_t priority = 0;               ///< comm_priority
  std::optional<std::int64_t> group_size;  ///< moeplan_group_size
  model::OpClass op = model::OpClass::Gemm;
  dag::Phase phase = dag::Phase::None;
  std::int32_t layer = -1;
  std::int32_t micro_batch = -1;
  std::size_t message = 0;  ///< 1-based position among the file's messages, for errors
};

/// @brief A stream of a moeplan trace's table (GlobalMetadata moeplan_streams).
struct StreamInfo {
  std::string name;
  dag::DispatchPolicy policy = dag::DispatchPolicy::InOrder;
};

/// @brief One rank's file.
struct ParsedFile {
  std::string path;
  std::int32_t rank = 0;
  bool moeplan = false;  ///< written by moeplan (its stream table is there)
  bool representative = false;
  /// comm_size of an all-gather is its nccl-tests size (its output): a file
  /// moeplan wrote before issue 29, without moeplan_comm_size "astra-sim".
  bool nccl_tests_comm_size = false;
  std::vector<StreamInfo> streams;
  std::vector<ParsedNode> nodes;  ///< by id
  /// Per node: its dependencies as node indices, METADATA and INVALID nodes
  /// passed through to what they wait for; empty for those nodes themselves.
  std::vector<std::vector<std::size_t>> deps;
};

/// The nodes of all the files (messages after each GlobalMetadata), counted
/// from their framing alone, before any node is read: an input Error at the
/// file that brings them past kMaxChakraNodes, or at framing that is cut short.
std::size_t count_chakra_nodes(const std::vector<ChakraFile>& files);

/// @brief What the files of one import read so far count against
/// kMaxChakraDependencies.
struct ImportCounts {
  std::size_t dependencies = 0;  ///< as written
  /// Once METADATA and INVALID nodes are passed through: each dependent of
  /// one waits for everything it waits for, counted before duplicates merge.
  std::size_t resolved_dependencies = 0;
};

/// Reads one file, adding what it holds to `counts`; every error is an input
/// Error located in file.path, a bound passed too.
ParsedFile parse_chakra_file(const ChakraFile& file, ImportCounts& counts);

/// "FILE: node ID (NAME)": how errors name a node.
std::string node_label(const ParsedNode& node);

}  // namespace moeplan::interop::detail
