#include <moeplan/exec/replay_plan.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/attention_shape.hpp>
#include <moeplan/cost/workload_sizing.hpp>

namespace moeplan::exec {
namespace {

double as_double(std::int64_t v) { return static_cast<double>(v); }

// round(x), at least 1: a task with a few FLOPs still runs one row / one head.
std::int64_t at_least_one(double x) { return std::max<std::int64_t>(1, std::llround(x)); }

std::int64_t ffn_gemms(model::FfnType type) { return type == model::FfnType::GeluFfn ? 2 : 3; }

GemmWork gemm_work(const dag::TaskGraph& graph, dag::TaskId t, const model::ModelSpec& m) {
  const std::string_view name = graph.name(t);
  GemmWork w;
  w.k = m.d_model;
  if (name.find("gate") != std::string_view::npos) {
    w.n = m.moe.num_experts;  // the router: d_model -> one logit per expert (workload_sizing: 2 t d E)
    w.count = 1;
  } else if (name.find("ffn") != std::string_view::npos) {
    w.n = m.ffn_hidden;  // a dense block's FFN
    w.count = ffn_gemms(m.ffn_type);
  } else {
    w.n = m.moe.expert_ffn_hidden;
    w.count = ffn_gemms(m.moe.expert_type);
  }
  if (w.k <= 0 || w.n <= 0)
    throw Error(ErrorKind::Input, fmt::format("task {} ('{}'): the model has no dimensions for its GEMM "
                                              "(d_model {}, width {})",
                                              t, name, w.k, w.n));
  w.m = at_least_one(graph.size(t) / (2.0 * as_double(w.k) * as_double(w.n) * as_double(w.count)));
  return w;
}

AttentionWork attention_work(const dag::TaskGraph& graph, dag::TaskId t, const model::ScenarioSpec& s,
                             std::span<const std::int64_t> slicing) {
  AttentionWork w;
  w.head_dim = s.model.head_dim;
  const std::int32_t slice = graph.micro_batch(t);
  if (!slicing.empty() && slice >= 0 && static_cast<std::size_t>(slice) < slicing.size()) {
    w.queries = slicing[static_cast<std::size_t>(slice)];
    w.context = 0;
    for (std::int32_t i = 0; i <= slice; ++i) w.context += slicing[static_cast<std::size_t>(i)];
  } else {
    w.queries = w.context = std::max<std::int64_t>(1, s.workload.seq_len / std::max<std::int64_t>(1, s.parallel.cp));
  }
  if (w.head_dim <= 0)
    throw Error(ErrorKind::Input, fmt::format("task {} ('{}'): the model has no head_dim", t, graph.name(t)));
  // The task as the cost model's attention shape prices it: its FLOPs are whole
  // sequences' attention (projections and core); backward replays 2x of both.
  const cost::AttentionTaskShape shape = cost::attention_task_shape(s.model, w.queries, w.context, graph.size(t));
  w.heads = shape.heads;
  for (const cost::GemmShape& g : shape.projections) {
    const GemmWork one{std::llround(g.m), std::llround(g.n), std::llround(g.k), 1};
    if (!w.projections.empty() && w.projections.back().m == one.m && w.projections.back().n == one.n &&
        w.projections.back().k == one.k)
      ++w.projections.back().count;
    else
      w.projections.push_back(one);
  }
  return w;
}

}  // namespace

ReplayPlan make_replay_plan(const dag::TaskGraph& graph, const model::ScenarioSpec& scenario,
                            std::span<const std::int64_t> slicing_tokens) {
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
      plan.tasks.push_back({c});
      continue;
    }
    switch (graph.op(t)) {
      case model::OpClass::Gemm:
        plan.tasks.push_back({gemm_work(graph, t, scenario.model)});
        break;
      case model::OpClass::Attention:
        plan.tasks.push_back({attention_work(graph, t, scenario, slicing_tokens)});
        break;
      default:
        throw Error(ErrorKind::Input, fmt::format("task {} ('{}'): a compute task of op class {} has no replay",
                                                  t, graph.name(t), model::to_string(graph.op(t))));
    }
  }
  return plan;
}

double replay_flops(const ReplayTask& task) {
  const auto gemm_flops = [](const GemmWork& g) {
    return 2.0 * as_double(g.m) * as_double(g.n) * as_double(g.k) * as_double(g.count);
  };
  if (const auto* g = std::get_if<GemmWork>(&task.work)) return gemm_flops(*g);
  if (const auto* a = std::get_if<AttentionWork>(&task.work)) {
    model::ModelSpec m;
    m.num_heads = m.num_kv_heads = a->heads;
    m.head_dim = a->head_dim;
    double flops = cost::attention_core_flops(m, as_double(a->queries), as_double(a->context));
    for (const GemmWork& p : a->projections) flops += gemm_flops(p);
    return flops;
  }
  return 0;
}

}  // namespace moeplan::exec
