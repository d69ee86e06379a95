#include <moeplan/sched/work_shapes.hpp>

#include <algorithm>
#include <cmath>

#include <moeplan/cost/attention_shape.hpp>
#include <moeplan/cost/expert_pricing.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::sched {
namespace {


// Whole rows and columns, at least 1: a GEMM of a fraction of a row still runs one.
std::int64_t whole(double x) { return std::max<std::int64_t>(1, std::llround(x)); }

void add(dag::WorkShape& work, const cost::GemmShape& g) {
  if (g.batch <= 0) return;
  const dag::GemmBatch b{whole(g.m), whole(g.n), whole(g.k), whole(g.batch)};
  if (!work.gemms.empty()) {
    dag::GemmBatch& last = work.gemms.back();
    if (last.m == b.m && last.n == b.n && last.k == b.k) {
      last.count += b.count;
      return;
    }
  }
  work.gemms.push_back(b);
}

}  // namespace

dag::WorkShape gemm_work(const std::vector<cost::GemmShape>& forward, bool backward) {
  dag::WorkShape work;
  for (const cost::GemmShape& f : forward) {
    if (!backward) {
      add(work, f);
      continue;
    }
    add(work, cost::input_gradient_shape(f));
    add(work, cost::weight_gradient_shape(f));
  }
  return work;
}

dag::WorkShape router_work(const model::ModelSpec& m, double tokens, bool backward) {
  return gemm_work({{tokens, as_double(m.moe.num_experts), as_double(m.d_model), 1.0, as_double(m.dtype_bytes)}},
                   backward);
}

dag::WorkShape dense_ffn_work(const model::ModelSpec& m, double tokens, double hidden, bool backward) {
  return gemm_work(
      cost::ffn_forward_gemms(m.ffn_type, tokens, as_double(m.d_model), hidden, 1.0, as_double(m.dtype_bytes)),
      backward);
}

dag::WorkShape expert_work(const model::ModelSpec& m, const model::ParallelSpec& p, const cost::MoeLayerSizes& sizes,
                           bool backward, double parts) {
  // The backward kernels are already the gradients (cost::expert_backward_gemms).
  return gemm_work(
      backward ? cost::expert_backward_gemms(m, p, sizes, parts) : cost::expert_forward_gemms(m, p, sizes, parts),
      false);
}

dag::WorkShape attention_work(const model::ModelSpec& m, std::int64_t queries, std::int64_t context, double flops) {
  const cost::AttentionTaskShape shape = cost::attention_task_shape(m, queries, context, flops);
  dag::WorkShape work = gemm_work(shape.projections, false);
  work.attention = dag::AttentionCore{shape.queries, shape.context, shape.heads, shape.head_dim};
  return work;
}

dag::WorkShape with_gemms(dag::WorkShape first, const dag::WorkShape& then) {
  first.gemms.insert(first.gemms.end(), then.gemms.begin(), then.gemms.end());
  return first;
}

}  // namespace moeplan::sched
