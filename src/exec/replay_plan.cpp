#include <moeplan/exec/replay_plan.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/workload_sizing.hpp>

namespace moeplan::exec {

ReplayPlan make_replay_plan(const dag::TaskGraph& graph) {
  ReplayPlan plan;
  plan.tasks.reserve(graph.size());
  for (const dag::Resource& r : graph.resources()) plan.ranks = std::max(plan.ranks, r.rank + 1);
  for (dag::TaskId t = 0; t < graph.size(); ++t) {
    if (graph.kind(t) == dag::TaskKind::Communication) {
      CommWork c;
      c.op = graph.op(t);
      c.size_bytes = graph.size(t);
      for (dag::ResourceId r : graph.resources(t)) c.ranks.push_back(graph.resources()[r].rank);
      if (c.op != model::OpClass::P2P) std::sort(c.ranks.begin(), c.ranks.end());
      c.priced_group = graph.group_size(t);
      plan.tasks.push_back({c});
      continue;
    }
    const dag::WorkShape* work = graph.work(t);
    if (work == nullptr)
      throw Error(ErrorKind::Input,
                  fmt::format("task {} ('{}'): a {} task without a recorded work shape has nothing to replay (its "
                              "graph must be built with work shapes recorded, as for the executor)",
                              t, graph.name(t), model::to_string(graph.op(t))));
    plan.tasks.push_back({*work});
  }
  return plan;
}

double replay_flops(const ReplayTask& task) {
  const auto* w = std::get_if<dag::WorkShape>(&task.work);
  if (w == nullptr) return 0;
  double flops = 0;
  for (const dag::GemmBatch& g : w->gemms) flops += dag::gemm_flops(g);
  if (w->attention) {
    const dag::AttentionCore& a = *w->attention;
    model::ModelSpec m;
    m.num_heads = m.num_kv_heads = a.heads;
    m.head_dim = a.head_dim;
    flops += cost::attention_core_flops(m, static_cast<double>(a.queries), static_cast<double>(a.context));
  }
  return flops;
}

}  // namespace moeplan::exec
