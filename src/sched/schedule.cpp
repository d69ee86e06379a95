#include <moeplan/sched/schedule.hpp>

namespace moeplan::sched {

dag::TaskId emit_task(dag::TaskGraphBuilder& builder, const TaskLabels& labels, dag::TaskKind kind, model::OpClass op,
                      double duration_ms, std::vector<dag::ResourceId> resources,
                      const std::vector<dag::TaskId>& after) {
  dag::TaskSpec spec;
  spec.name = labels.name;
  spec.kind = kind;
  spec.op = op;
  spec.duration_ms = duration_ms;
  spec.size = labels.size;
  spec.resources = std::move(resources);
  spec.group_size = static_cast<std::int32_t>(labels.group);
  spec.phase = labels.phase;
  spec.layer = labels.layer;
  spec.micro_batch = labels.index;
  spec.priority = labels.priority;
  const dag::TaskId id = builder.add_task(spec);
  for (dag::TaskId d : after) builder.add_dependency(d, id);
  return id;
}

dag::GraphLimit graph_limit(const model::RunLimits& limits) {
  return {limits.max_graph_tasks(), model::kPeakBytesPerTask, "raise --max-memory"};
}

}  // namespace moeplan::sched
