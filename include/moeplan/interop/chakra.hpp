#pragma once
// Chakra execution traces in and out (issue 18 item 1). Chakra (MLCommons) is
// the trace format ASTRA-sim simulates: one file per rank, a stream of
// varint-length-prefixed Protobuf messages of proto/chakra/et_def.proto, a
// GlobalMetadata first, then one Node per operation. Exporting writes the
// task graph a scenario builds (and when each task ran) in that format;
// importing reads such files (moeplan's, or ones converted from a PyTorch
// run) back into a task graph the engine runs. docs/formats.md, "Chakra
// execution traces", has the mapping both ways.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/dag/task_graph.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/sched/schedule.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::plan {
class ScenarioRun;
}

namespace moeplan::interop {

// ---- Framing (Chakra's protolib encodeMessage / decodeMessage) ----

/// Appends `value` as a base-128 varint, least significant group first.
void append_varint(std::string& out, std::uint64_t value);
/// Appends one length-delimited message: its length as a varint, then its bytes.
void append_delimited(std::string& out, std::string_view message);

/// @brief One message of a delimited stream and the offset of its length prefix.
struct DelimitedMessage {
  std::string_view bytes;
  std::size_t offset = 0;
};

/// @brief Reads a delimited stream one message at a time, so that a reader can
/// count what it takes before it holds it (a trace's nodes against kMaxChakraNodes).
class DelimitedReader {
 public:
  DelimitedReader(std::string_view stream, std::string file) : stream_(stream), file_(std::move(file)) {}
  /// The next message, or nothing at the end of the stream. A length prefix
  /// cut short by the end of the stream, one of more than 10 bytes or above
  /// 2^63, and a message longer than the bytes left are input Errors located
  /// in `file`, naming the message (1-based) and the offset of its prefix.
  std::optional<DelimitedMessage> next();

 private:
  std::string_view stream_;
  std::string file_;
  std::size_t at_ = 0;
  std::size_t count_ = 0;
};

/// Every message of a delimited stream, in order (DelimitedReader's errors).
std::vector<DelimitedMessage> split_delimited(std::string_view stream, const std::string& file);

// ---- Export ----

/// The file of one rank: ASTRA-sim reads `PREFIX.RANK.et` (--workload-configuration=DIR/PREFIX).
std::string chakra_file_name(std::int32_t rank);
inline constexpr const char* kChakraPrefix = "trace";
/// ASTRA-sim's --comm-group-configuration: {"pg_name": [ranks], ...}.
inline constexpr const char* kChakraCommGroupsFile = "comm_groups.json";

/// @brief What an export records about where the graph came from, and what
/// the graph does not say itself.
struct ChakraExportOptions {
  std::string scenario;
  std::string schedule;
  /// Per-rank compute factors the engine applied (stragglers): exported
  /// compute durations carry them, as the trace has no such factor.
  std::vector<double> rank_compute_slowdown;
  /// Bytes of one element of a compute task's operands and results (the
  /// model's dtype): with the task's work shape, its `tensor_size`. An FP8
  /// GEMM reads 1-byte operands and writes results of this size.
  double dtype_bytes = 2;
};

/// @brief Takes an export's files as they are made, so that an export of many
/// ranks never holds more than one rank's file.
class ChakraFileSink {
 public:
  virtual ~ChakraFileSink() = default;
  /// Once, before any file: how many rank files follow (ranks 0..ranks-1).
  virtual void begin(std::int32_t ranks) = 0;
  /// The bytes of chakra_file_name(rank), ranks in order.
  virtual void file(std::int32_t rank, std::string_view bytes) = 0;
};

/// @brief An exported trace: what was written, and the communicator groups.
struct ChakraExport {
  std::int32_t ranks = 0;
  /// index = rank: the bytes of chakra_file_name(rank); filled only by the
  /// export_chakra overload without a sink.
  std::vector<std::string> files;
  std::string comm_groups_json;  ///< kChakraCommGroupsFile
  std::size_t compute_nodes = 0;
  std::size_t collective_nodes = 0;  ///< one per member rank of each collective
  std::size_t send_nodes = 0;
  std::size_t recv_nodes = 0;
  std::size_t groups = 0;
};

/// Writes every task of `graph` into the file of each rank it holds a
/// resource of, with its dependencies on that rank, its stream and what the
/// timeline says of it, one rank at a time into `sink`; memory beyond the
/// graph's is an index of each rank's tasks and one file. Graphs the format
/// cannot carry are a runtime Error naming the task, raised before
/// sink.begin(): a Shared link, a task on two streams of one rank, a
/// dependency across ranks other than through a collective or a transfer, a
/// collective priced for more ranks than it holds (a graph in which a rank
/// stands for others, which ASTRA-sim cannot run).
ChakraExport export_chakra(const dag::TaskGraph& graph, const sim::Timeline& timeline,
                           const ChakraExportOptions& options, ChakraFileSink& sink);
/// The same, every file held in ChakraExport::files.
ChakraExport export_chakra(const dag::TaskGraph& graph, const sim::Timeline& timeline,
                           const ChakraExportOptions& options);

/// @brief A scenario's schedule, built and simulated as `simulate` does, exported.
struct ScenarioChakraExport {
  ChakraExport trace;
  std::string schedule;
  double iteration_ms = 0;
};

/// `schedule` empty: the scenario's own; `degree` as simulate --degree. Input
/// errors: noise (schedule.compute_jitter_cv), "all", and a graph in which a
/// rank stands for others (symmetric mode, a pipeline of stages), which
/// ASTRA-sim cannot run: the error says what the graph stands for and how
/// the family exports every rank, when it can.
ScenarioChakraExport export_scenario_chakra(const plan::ScenarioRun& run, const std::string& schedule,
                                            std::optional<std::int64_t> degree, ChakraFileSink& sink);

// ---- Import ----

/// @brief How communication nodes get their time.
enum class CommPricing {
  Model,  ///< the cost model, from comm_type, comm_size and the group's ranks on the cluster
  Trace,  ///< the trace's own time (moeplan_duration_ms, else duration_micros)
};

/// @brief One rank's file as read.
struct ChakraFile {
  std::string path;
  std::int32_t rank = 0;
  std::string bytes;
};

/// @brief The files of one trace directory.
struct ChakraInput {
  std::string directory;
  std::vector<ChakraFile> files;  ///< ranks 0..n-1 in order
  std::optional<std::string> comm_groups_json;
  std::string comm_groups_path;
};

// Bounds of one import, all its files together (docs/reliability.md,
// "Resource bounds"), checked as the files are read, before what they count is
// held: a trace past one is an input Error naming the file, what was counted
// and the bound, never std::bad_alloc. A rank's trace of one training step
// holds a node per kernel and operator, some 10^4 to 10^5 (a PyTorch run
// converted by Chakra's tools); an import holds about 560 bytes per node
// (measured: docs/reliability.md), so the node bound keeps one within about
// 1.2 GiB beside its files' bytes.
/// Nodes (messages after each file's GlobalMetadata).
inline constexpr std::size_t kMaxChakraNodes = std::size_t{1} << 21;
/// Dependencies (data_deps and ctrl_deps) as written, and again as resolved
/// once METADATA and INVALID nodes are passed through: 4 per node on average.
inline constexpr std::size_t kMaxChakraDependencies = std::size_t{1} << 23;
/// Groups of comm_groups.json: ten kinds of process group (TP, CP, DP, EP,
/// PP, ...) for each rank of a 26,000-rank trace, whose files could hold no
/// more than 80 nodes a rank within kMaxChakraNodes.
inline constexpr std::size_t kMaxChakraGroups = std::size_t{1} << 18;
/// Bytes of the trace files: what the import reads into memory.
inline constexpr std::uint64_t kMaxChakraBytes = std::uint64_t{2} << 30;

/// Reads DIR/PREFIX.RANK.et for ranks 0..n-1 (one prefix) and
/// DIR/comm_groups.json when present. Input errors: not a directory, no
/// trace, two prefixes, a rank missing, a file over 1 GiB or not regular,
/// files of more than kMaxChakraBytes together.
ChakraInput read_chakra_directory(const std::string& directory);

/// @brief An imported trace, ready for plan::run_schedule.
struct ChakraImport {
  sched::BuiltSchedule built;  ///< schedule "chakra", overlap factors from the cost profile
  std::int32_t ranks = 0;
  std::size_t compute_tasks = 0;
  std::size_t collectives = 0;
  std::size_t transfers = 0;        ///< sends (a receive is no task: it joins its send and its own dependencies)
  std::size_t priced_by_model = 0;  ///< communication tasks the cost model priced
  bool representative = false;
};

/// Builds the task graph of a trace, sends and receives run as ASTRA-sim runs
/// them (docs/formats.md, "What `import-chakra` reads"). Bad files are input
/// Errors naming the file and what is wrong (truncated framing, a message that is not the one
/// expected, an unknown or unsupported node type, a dependency on a node the
/// file lacks, a cycle, collectives or transfers whose partners disagree or
/// are missing, more nodes, dependencies or groups than the bounds above).
/// CommPricing::Model refuses representative traces.
ChakraImport import_chakra(const ChakraInput& input, const model::ClusterSpec& cluster, const cost::CostModel& costs,
                           CommPricing comm);

}  // namespace moeplan::interop
