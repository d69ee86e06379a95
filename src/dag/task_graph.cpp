#include <moeplan/dag/task_graph.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::dag {

std::string_view TaskGraph::name(TaskId t) const {
  const Record& r = tasks_[t];
  return std::string_view(text_).substr(r.name_offset, r.name_length);
}

std::string_view TaskGraph::tags(TaskId t) const {
  const Record& r = tasks_[t];
  return std::string_view(text_).substr(r.tags_offset, r.tags_length);
}

std::span<const ResourceId> TaskGraph::resources(TaskId t) const {
  const Record& r = tasks_[t];
  if (r.resource_count == 1) return std::span<const ResourceId>(&r.resource_ref, 1);
  return std::span<const ResourceId>(resource_lists_.data() + r.resource_ref, r.resource_count);
}

const WorkShape* TaskGraph::work(TaskId t) const {
  if (work_index_.empty() || work_index_[t] == kNoWork) return nullptr;
  return &works_[work_index_[t]];
}

double gemm_flops(const GemmBatch& g) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
         static_cast<double>(g.count);
}

double work_bytes(const WorkShape& work, double operand_bytes, double result_bytes) {
  double bytes = 0;
  for (const GemmBatch& g : work.gemms) {
    const double m = static_cast<double>(g.m), n = static_cast<double>(g.n), k = static_cast<double>(g.k);
    bytes += static_cast<double>(g.count) * ((m * k + k * n) * operand_bytes + m * n * result_bytes);
  }
  if (work.attention) {
    const AttentionCore& a = *work.attention;
    // One token, every head. K and V are counted at the query heads: AttentionCore records no KV heads, and
    // with grouped-query attention they move less.
    const double row = static_cast<double>(a.heads) * static_cast<double>(a.head_dim);
    const double queries = static_cast<double>(a.queries), context = static_cast<double>(a.context);
    bytes += (queries + 2 * context) * row * operand_bytes + queries * row * result_bytes;  // Q, K, V; O
  }
  return bytes;
}

std::size_t TaskGraph::memory_bytes() const {
  std::size_t work_bytes = work_index_.capacity() * sizeof(std::uint32_t) + works_.capacity() * sizeof(WorkShape);
  for (const WorkShape& w : works_) work_bytes += w.gemms.capacity() * sizeof(GemmBatch);
  auto csr_bytes = [](const CsrGraph& g) {
    // Row starts (one per vertex + 1) and column indices (one per edge), 32-bit each.
    return (num_vertices(g) + 1 + num_edges(g)) * sizeof(std::uint32_t);
  };
  return tasks_.capacity() * sizeof(Record) + text_.capacity() + resource_lists_.capacity() * sizeof(ResourceId) +
         resources_.capacity() * sizeof(Resource) + csr_bytes(successors_) + csr_bytes(predecessors_) + work_bytes;
}

ResourceId TaskGraphBuilder::add_resource(Resource resource) {
  graph_.resources_.push_back(std::move(resource));
  return static_cast<ResourceId>(graph_.resources_.size() - 1);
}

void TaskGraphBuilder::reserve(std::size_t tasks, std::size_t dependencies) {
  graph_.tasks_.reserve(tasks);
  edges_.reserve(dependencies);
}

namespace {

// "12.0 MiB" below a GiB, "25.5 GiB" from there: a limit of 0.01 GiB must not print as 0.0.
std::string memory_text(long double bytes) {
  if (bytes < (1 << 30)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes / (1 << 20)));
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes / (1 << 30)));
}

}  // namespace

void TaskGraphBuilder::refuse(std::size_t tasks, const std::string& how) const {
  const long double per_task = static_cast<long double>(limit_.bytes_per_task);
  throw Error(ErrorKind::Limit,
              fmt::format("the task graph would have {} {} tasks, about {} at {} bytes per task, more than the {} "
                          "allowed ({}, or make the scenario smaller)",
                          how, tasks, memory_text(static_cast<long double>(tasks) * per_task), limit_.bytes_per_task,
                          memory_text(static_cast<long double>(limit_.max_tasks) * per_task), limit_.raise_hint));
}

void TaskGraphBuilder::progress(std::size_t done, std::size_t total) {
  if (limit_.max_tasks == 0 || done == 0 || done >= total) return;
  // Tasks so far scaled to the whole loop, in long double: 2^32 tasks x 2^20 steps.
  const long double estimate =
      static_cast<long double>(graph_.tasks_.size()) * static_cast<long double>(total) / static_cast<long double>(done);
  if (estimate > static_cast<long double>(limit_.max_tasks))
    refuse(static_cast<std::size_t>(std::min(estimate, static_cast<long double>(SIZE_MAX / 2))), "about");
}

TaskId TaskGraphBuilder::add_task(const TaskSpec& spec) {
  TaskGraph& g = graph_;
  if (limit_.max_tasks != 0 && g.tasks_.size() >= limit_.max_tasks) refuse(limit_.max_tasks + 1, "at least");
  // Task ids and name offsets are 32-bit: past them is an input too large, not a crash.
  if (g.tasks_.size() >= std::numeric_limits<TaskId>::max() ||
      g.text_.size() + spec.name.size() + spec.tags.size() > std::numeric_limits<std::uint32_t>::max() ||
      g.resource_lists_.size() + spec.resources.size() > std::numeric_limits<std::uint32_t>::max())
    throw Error(ErrorKind::Limit, fmt::format("the task graph passes {} tasks or 4 GiB of task names, or 2^32 collective "
                                              "members, the most the engine can hold; make the scenario smaller",
                                              std::numeric_limits<TaskId>::max()));
  const TaskId id = static_cast<TaskId>(g.tasks_.size());
  TaskGraph::Record r{};
  r.size = spec.size;
  r.duration_ms = spec.duration_ms;
  r.latency_ms = spec.latency_ms;
  const std::size_t name_length = std::min<std::size_t>(spec.name.size(), 0xFFFF);
  const std::size_t tags_length = std::min<std::size_t>(spec.tags.size(), 0xFFFF);
  r.name_offset = static_cast<std::uint32_t>(g.text_.size());
  r.name_length = static_cast<std::uint16_t>(name_length);
  g.text_.append(spec.name.substr(0, name_length));
  r.tags_offset = static_cast<std::uint32_t>(g.text_.size());
  r.tags_length = static_cast<std::uint16_t>(tags_length);
  g.text_.append(spec.tags.substr(0, tags_length));
  r.resource_count = static_cast<std::uint32_t>(spec.resources.size());
  if (spec.resources.size() == 1) {
    r.resource_ref = spec.resources.front();
  } else {
    r.resource_ref = static_cast<std::uint32_t>(g.resource_lists_.size());
    g.resource_lists_.insert(g.resource_lists_.end(), spec.resources.begin(), spec.resources.end());
  }
  r.group_size = spec.group_size;
  r.layer = spec.layer;
  r.micro_batch = spec.micro_batch;
  r.priority = spec.priority;
  r.kind = spec.kind;
  r.op = static_cast<std::uint8_t>(spec.op);
  r.phase = spec.phase;
  record_work(spec.work);
  g.tasks_.push_back(r);
  return id;
}

void TaskGraphBuilder::record_work(const WorkShape* work) {
  TaskGraph& g = graph_;
  if (work == nullptr) {
    if (!g.work_index_.empty()) g.work_index_.push_back(TaskGraph::kNoWork);
    return;
  }
  // The index starts with the first shape: a graph without any pays nothing.
  if (g.work_index_.empty()) {
    g.work_index_.reserve(g.tasks_.capacity());
    g.work_index_.assign(g.tasks_.size(), TaskGraph::kNoWork);
  }
  const auto [it, added] = work_ids_.try_emplace(*work, static_cast<std::uint32_t>(g.works_.size()));
  if (added) g.works_.push_back(*work);
  g.work_index_.push_back(it->second);
}

void TaskGraphBuilder::add_dependency(TaskId before, TaskId after) { edges_.emplace_back(before, after); }

namespace {

// Kahn's algorithm: the tasks never released lie on or behind a cycle; walk
// predecessors among them until one repeats to name a task on the cycle.
void check_acyclic(const TaskGraph& g) {
  const std::size_t n = g.size();
  std::vector<std::uint32_t> indegree(n, 0);
  const CsrGraph& succ = g.successors_graph();
  for (std::size_t v = 0; v < n; ++v)
    for (auto e : boost::make_iterator_range(out_edges(static_cast<std::uint32_t>(v), succ)))
      ++indegree[target(e, succ)];
  std::vector<std::uint32_t> stack;
  for (std::size_t v = 0; v < n; ++v)
    if (indegree[v] == 0) stack.push_back(static_cast<std::uint32_t>(v));
  std::size_t released = 0;
  while (!stack.empty()) {
    const std::uint32_t v = stack.back();
    stack.pop_back();
    ++released;
    for (auto e : boost::make_iterator_range(out_edges(v, succ)))
      if (--indegree[target(e, succ)] == 0) stack.push_back(target(e, succ));
  }
  if (released == n) return;
  std::uint32_t v = 0;
  while (indegree[v] == 0) ++v;
  std::vector<bool> seen(n, false);
  const CsrGraph& pred = g.predecessors_graph();
  while (!seen[v]) {
    seen[v] = true;
    for (auto e : boost::make_iterator_range(out_edges(v, pred)))
      if (indegree[target(e, pred)] > 0) {
        v = target(e, pred);
        break;
      }
  }
  throw Error(ErrorKind::Input, fmt::format("task '{}' is on a dependency cycle", g.name(v)), "dependencies");
}

}  // namespace

TaskGraph TaskGraphBuilder::build() && {
  TaskGraph& g = graph_;
  const std::size_t n = g.tasks_.size();
  for (const Resource& res : g.resources_) {
    if (res.rank < 0)
      throw Error(ErrorKind::Input, fmt::format("resource '{}' has rank {}; ranks are >= 0", res.name, res.rank),
                  "resources");
    if (res.policy == DispatchPolicy::Shared && !(std::isfinite(res.capacity) && res.capacity > 0))
      throw Error(ErrorKind::Input,
                  fmt::format("shared resource '{}' of rank {} has capacity {}; it must be finite and > 0", res.name,
                              res.rank, res.capacity),
                  "resources");
  }
  for (TaskId t = 0; t < n; ++t) {
    const TaskGraph::Record& r = g.tasks_[t];
    if (!std::isfinite(r.duration_ms) || r.duration_ms < 0)
      throw Error(
          ErrorKind::Input,
          fmt::format("task '{}' has duration {} ms; durations must be finite and >= 0", g.name(t), r.duration_ms),
          "duration_ms");
    if (r.resource_count == 0)
      throw Error(ErrorKind::Input, fmt::format("task '{}' runs on no resource", g.name(t)), "resources");
    if (!std::isfinite(r.latency_ms) || r.latency_ms < 0 || r.latency_ms > r.duration_ms)
      throw Error(ErrorKind::Input,
                  fmt::format("task '{}' has latency {} ms; it must lie in [0, duration {} ms]", g.name(t),
                              r.latency_ms, r.duration_ms),
                  "latency_ms");
    bool shared = false;
    for (ResourceId res : g.resources(t)) {
      if (res >= g.resources_.size())
        throw Error(ErrorKind::Input, fmt::format("task '{}' runs on unknown resource #{}", g.name(t), res),
                    "resources");
      shared = shared || g.resources_[res].policy == DispatchPolicy::Shared;
    }
    // A transfer's rate is size / streaming time: without a size it has none.
    if (shared && r.duration_ms > r.latency_ms && !(std::isfinite(r.size) && r.size > 0))
      throw Error(ErrorKind::Input,
                  fmt::format("task '{}' streams on a shared resource but has size {}; it needs a size > 0 (its rate "
                              "is size / (duration - latency))",
                              g.name(t), r.size),
                  "size");
  }
  for (const auto& [before, after] : edges_) {
    if (before >= n || after >= n) {
      const TaskId known = before < n ? before : after;
      const std::string known_name = known < n ? std::string(g.name(known)) : std::string("?");
      throw Error(ErrorKind::Input,
                  fmt::format("task '{}' has a dependency on task #{}, which does not exist", known_name,
                              before < n ? after : before),
                  "dependencies");
    }
    if (before == after)
      throw Error(ErrorKind::Input, fmt::format("task '{}' depends on itself", g.name(before)), "dependencies");
  }
  g.successors_ =
      CsrGraph(boost::edges_are_unsorted_multi_pass, edges_.begin(), edges_.end(), static_cast<std::uint32_t>(n));
  std::vector<std::pair<TaskId, TaskId>> reversed;
  reversed.reserve(edges_.size());
  for (const auto& [before, after] : edges_) reversed.emplace_back(after, before);
  edges_.clear();
  edges_.shrink_to_fit();
  g.predecessors_ =
      CsrGraph(boost::edges_are_unsorted_multi_pass, reversed.begin(), reversed.end(), static_cast<std::uint32_t>(n));
  check_acyclic(g);
  g.tasks_.shrink_to_fit();
  g.text_.shrink_to_fit();
  g.work_index_.shrink_to_fit();
  g.works_.shrink_to_fit();
  work_ids_.clear();
  return std::move(graph_);
}

const char* to_string(TaskKind kind) { return kind == TaskKind::Compute ? "compute" : "communication"; }
const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::Forward:
      return "forward";
    case Phase::Backward:
      return "backward";
    default:
      return "none";
  }
}

}  // namespace moeplan::dag
