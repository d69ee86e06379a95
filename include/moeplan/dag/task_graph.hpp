#pragma once
// The task DAG every schedule emits and the engine runs. Building is separate
// from running: a TaskGraphBuilder collects resources, tasks (in issue order)
// and dependencies; build() validates them and freezes an immutable TaskGraph
// whose edges live in Boost.Graph compressed-sparse-row graphs.
//
// The DAG knows nothing about MoE: a task is a duration on one or more
// resources (several for a collective), with labels for reports and traces,
// and, when its builder records it, the work behind a compute task's FLOPs
// (dag/work_shape.hpp) for the executor, kept beside the 64-byte records.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/range/iterator_range.hpp>

#include <moeplan/dag/work_shape.hpp>
#include <moeplan/model/specs.hpp>

namespace moeplan::dag {

using TaskId = std::uint32_t;
using ResourceId = std::uint32_t;

enum class TaskKind : std::uint8_t { Compute, Communication };
enum class Phase : std::uint8_t { None, Forward, Backward };

/// How a resource picks its next task.
enum class DispatchPolicy : std::uint8_t {
  InOrder,   ///< CUDA-stream semantics: tasks start in issue order; a not-ready head blocks the rest
  Priority,  ///< ready pool: highest priority first, ties by issue order; non-preemptive
  /// A link of `capacity` units (bytes) per ms: every ready task on it runs at
  /// once and the transfers streaming on it split its capacity, max-min fair
  /// over all the shared links each one crosses (docs/architecture.md, "Engine").
  Shared,
};

/// @brief A stream or link of one rank (e.g. rank 3's "compute" stream).
struct Resource {
  std::string name;  ///< stream name, e.g. "compute", "comm", "intra", "inter", "nic"
  std::int32_t rank = 0;  ///< >= 0
  DispatchPolicy policy = DispatchPolicy::InOrder;
  double capacity = 0;  ///< Shared only: units of TaskSpec::size per ms (> 0)
};

/// @brief What a builder says about one task.
struct TaskSpec {
  std::string_view name;
  TaskKind kind = TaskKind::Compute;
  model::OpClass op = model::OpClass::Gemm;
  double size = 0;                    ///< FLOPs or bytes, as priced by the cost model
  double duration_ms = 0;             ///< from the cost model, at full rate
  /// On Shared resources: the part of duration_ms that is a fixed startup
  /// (the alpha of an alpha-beta line), paid once and using no bandwidth; the
  /// rest streams `size` units at up to size / (duration_ms - latency_ms) per ms.
  double latency_ms = 0;
  std::vector<ResourceId> resources;  ///< one for a local task; every member's for a collective
  std::int32_t group_size = 1;        ///< ranks in the collective (may exceed resources in symmetric mode)
  Phase phase = Phase::None;
  std::int32_t layer = -1;
  std::int32_t micro_batch = -1;
  std::int32_t priority = 0;  ///< higher runs first on Priority resources
  std::string_view tags;      ///< free "key=value,..." labels for traces
  /// A compute task's work as its builder priced it, for the executor; nullptr:
  /// none recorded (the graph then spends no byte per task on work shapes).
  const WorkShape* work = nullptr;
};

using CsrGraph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, boost::no_property,
                                                    boost::no_property, std::uint32_t, std::uint32_t>;

/// @brief An immutable, validated task DAG.
class TaskGraph {
 public:
  std::size_t size() const { return tasks_.size(); }
  const std::vector<Resource>& resources() const { return resources_; }

  std::string_view name(TaskId t) const;
  std::string_view tags(TaskId t) const;
  TaskKind kind(TaskId t) const { return tasks_[t].kind; }
  model::OpClass op(TaskId t) const { return static_cast<model::OpClass>(tasks_[t].op); }
  double size(TaskId t) const { return tasks_[t].size; }
  double duration_ms(TaskId t) const { return tasks_[t].duration_ms; }
  double latency_ms(TaskId t) const { return tasks_[t].latency_ms; }
  std::span<const ResourceId> resources(TaskId t) const;
  std::int32_t group_size(TaskId t) const { return tasks_[t].group_size; }
  Phase phase(TaskId t) const { return tasks_[t].phase; }
  std::int32_t layer(TaskId t) const { return tasks_[t].layer; }
  std::int32_t micro_batch(TaskId t) const { return tasks_[t].micro_batch; }
  std::int32_t priority(TaskId t) const { return tasks_[t].priority; }
  /// The work its builder recorded (TaskSpec::work), or nullptr when it recorded none.
  const WorkShape* work(TaskId t) const;

  const CsrGraph& successors_graph() const { return successors_; }
  const CsrGraph& predecessors_graph() const { return predecessors_; }
  std::size_t num_dependencies() const { return num_edges(successors_); }

  /// Heap bytes held (capacities), for the engine benchmark's bytes per task.
  std::size_t memory_bytes() const;

 private:
  friend class TaskGraphBuilder;
  struct Record {
    double size;
    double duration_ms;
    double latency_ms;
    std::uint32_t name_offset;
    std::uint32_t tags_offset;
    /// The resource itself when resource_count == 1, else the offset of the
    /// members in resource_lists_ (one field: a record stays 64 bytes).
    std::uint32_t resource_ref;
    std::uint32_t resource_count;
    std::int32_t group_size;
    std::int32_t layer;
    std::int32_t micro_batch;
    std::int32_t priority;
    std::uint16_t name_length;
    std::uint16_t tags_length;
    TaskKind kind;
    std::uint8_t op;  ///< a model::OpClass, in one byte (the enum's underlying type is int)
    Phase phase;
  };
  // Bytes per task enter the memory bound (model::kPeakBytesPerTask).
  static_assert(sizeof(Record) <= 64, "a task record must stay within 64 bytes");
  std::vector<Record> tasks_;
  std::vector<Resource> resources_;
  std::string text_;                        // names and tags, back to back
  std::vector<ResourceId> resource_lists_;  // members of collectives
  // Work shapes beside the records (a record stays 64 bytes): per task an
  // index into works_, which holds each distinct shape once (every rank's copy
  // of a task, every layer, shares one). Both empty when no task has one.
  static constexpr std::uint32_t kNoWork = 0xFFFFFFFF;
  std::vector<std::uint32_t> work_index_;
  std::vector<WorkShape> works_;
  CsrGraph successors_;
  CsrGraph predecessors_;
};

/// @brief A bound on a graph's size, checked while it is built (issue 14 item
/// 4): a graph too large for memory is refused before it is run, not met as
/// std::bad_alloc after a minute.
struct GraphLimit {
  std::size_t max_tasks = 0;       ///< 0: no bound
  std::size_t bytes_per_task = 0;  ///< peak bytes one task costs, to say how much memory the graph needs
  std::string raise_hint;          ///< what the user can change, e.g. "raise " + option_ref("request.max_memory")
};

/// @brief Collects resources, tasks and dependencies; build() checks and freezes them.
class TaskGraphBuilder {
 public:
  void set_limit(GraphLimit limit) { limit_ = std::move(limit); }
  /// The builder's outer loop has done `done` of `total` alike steps (blocks,
  /// micro-batches, stages): a graph that at this rate would pass the limit is
  /// refused now, with the estimate, instead of when it reaches the limit.
  void progress(std::size_t done, std::size_t total);
  ResourceId add_resource(Resource resource);
  /// Tasks are issued in the order they are added (in-order streams start them so).
  TaskId add_task(const TaskSpec& task);
  /// `after` cannot start before `before` ends.
  void add_dependency(TaskId before, TaskId after);
  std::size_t size() const { return graph_.tasks_.size(); }
  void reserve(std::size_t tasks, std::size_t dependencies);

  /// Throws an input Error naming the task for: a dependency on a task that
  /// does not exist, an unknown resource, a negative or non-finite duration, a
  /// latency outside [0, duration], a task streaming on a Shared resource with
  /// no size, a Shared resource without a positive capacity, a cycle.
  TaskGraph build() &&;

 private:
  [[noreturn]] void refuse(std::size_t tasks, const std::string& how) const;

  void record_work(const WorkShape* work);

  TaskGraph graph_;
  std::vector<std::pair<TaskId, TaskId>> edges_;
  std::map<WorkShape, std::uint32_t> work_ids_;  // works_ index of each distinct shape, while building
  GraphLimit limit_;
};

const char* to_string(TaskKind kind);
const char* to_string(Phase phase);

}  // namespace moeplan::dag
