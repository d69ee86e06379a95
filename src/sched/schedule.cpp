#include <moeplan/sched/schedule.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

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
  spec.work = labels.work;
  const dag::TaskId id = builder.add_task(spec);
  for (dag::TaskId d : after) builder.add_dependency(d, id);
  return id;
}

dag::GraphLimit graph_limit(const model::RunLimits& limits) {
  return {limits.max_graph_tasks(), model::kPeakBytesPerTask, "raise " + option_ref("request.max_memory")};
}

RankLayout rank_layout(const model::ScenarioSpec& s, bool multi_rank, const char* family) {
  if (!multi_rank) return {};
  const model::ParallelSpec& p = s.parallel;
  if (p.pp != 1 || p.vpp != 1)
    throw Error(ErrorKind::Input,
                fmt::format("multi_rank {} needs pp = vpp = 1: every rank runs every layer (got pp {}, vpp {})", family,
                            p.pp, p.vpp),
                "schedule.mode");
  // The order the builders price groups in (strided_group_shape): Megatron's default.
  parallel::MappingRequest q;
  q.world = s.cluster.world_size();
  q.tp = p.tp;
  q.cp = p.cp;
  q.ep = p.ep;
  q.etp = p.etp;
  const parallel::Mapping m = parallel::make_mapping(q);
  MOEPLAN_CHECK(m.dp == p.dp && m.edp == p.edp, "a validated scenario's dp and edp follow from the world");
  RankLayout out;
  out.ranks = static_cast<std::int32_t>(q.world);
  out.tp = m.attention.at("tp");
  out.dp = m.attention.at("dp");
  out.etp = m.expert.at("etp");
  out.ep = m.expert.at("ep");
  out.edp = m.expert.at("edp");
  return out;
}

namespace {

// A task's dependencies without repeats: members of a group may share a producer.
std::vector<dag::TaskId> unique_ids(std::vector<dag::TaskId> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

RankTasks emit_on_ranks(dag::TaskGraphBuilder& builder, const TaskLabels& labels, dag::TaskKind kind,
                        model::OpClass op, double duration_ms, const std::vector<dag::ResourceId>& streams,
                        const std::vector<RankTasks>& after) {
  return emit_on_ranks(builder, labels, kind, op, [&](std::int64_t) { return RankCost{duration_ms, labels.size}; },
                       streams, after);
}

RankTasks emit_on_ranks(dag::TaskGraphBuilder& builder, const TaskLabels& labels, dag::TaskKind kind,
                        model::OpClass op, const RankCostFn& cost, const std::vector<dag::ResourceId>& streams,
                        const std::vector<RankTasks>& after) {
  RankTasks out(streams.size());
  TaskLabels own = labels;
  for (std::size_t r = 0; r < streams.size(); ++r) {
    std::vector<dag::TaskId> deps;
    for (const RankTasks& a : after) deps.push_back(a[r]);
    const RankCost c = cost(static_cast<std::int64_t>(r));
    own.size = c.size;
    own.work = c.work ? &*c.work : labels.work;
    out[r] = emit_task(builder, own, kind, op, c.duration_ms, {streams[r]}, unique_ids(std::move(deps)));
  }
  return out;
}

RankTasks emit_collective(dag::TaskGraphBuilder& builder, const TaskLabels& labels, model::OpClass op,
                          double duration_ms, const parallel::RankGroups& groups,
                          const std::vector<dag::ResourceId>& streams, const std::vector<RankTasks>& after) {
  return emit_collective(builder, labels, op, [&](std::int64_t) { return RankCost{duration_ms, labels.size}; },
                         groups, streams, after);
}

RankTasks emit_collective(dag::TaskGraphBuilder& builder, const TaskLabels& labels, model::OpClass op,
                          const RankCostFn& cost, const parallel::RankGroups& groups,
                          const std::vector<dag::ResourceId>& streams, const std::vector<RankTasks>& after) {
  RankTasks out(streams.size());
  TaskLabels own = labels;
  for (const std::vector<std::int64_t>& group : groups) {
    std::vector<dag::ResourceId> pools;
    std::vector<dag::TaskId> deps;
    RankCost slowest;
    for (std::int64_t r : group) {
      pools.push_back(streams[static_cast<std::size_t>(r)]);
      for (const RankTasks& a : after) deps.push_back(a[static_cast<std::size_t>(r)]);
      const RankCost c = cost(r);
      slowest.duration_ms = std::max(slowest.duration_ms, c.duration_ms);
      slowest.size = std::max(slowest.size, c.size);
    }
    own.size = slowest.size;
    const dag::TaskId id = emit_task(builder, own, dag::TaskKind::Communication, op, slowest.duration_ms,
                                     std::move(pools), unique_ids(std::move(deps)));
    for (std::int64_t r : group) out[static_cast<std::size_t>(r)] = id;
  }
  return out;
}

std::vector<double> straggler_slowdown(const model::ScenarioSpec& s) {
  if (!s.schedule.slow_ranks_compute_factor) return {};
  const std::int64_t world = s.cluster.world_size();
  const auto slow = static_cast<std::int64_t>(std::ceil(s.schedule.slow_ranks_fraction * static_cast<double>(world)));
  std::vector<double> factors(static_cast<std::size_t>(world), 1.0);
  for (std::int64_t r = 0; r < slow && r < world; ++r)
    factors[static_cast<std::size_t>(r)] = *s.schedule.slow_ranks_compute_factor;
  return factors;
}

}  // namespace moeplan::sched
