#include <moeplan/sched/pipeline.hpp>

#include <limits>

#include <fmt/compile.h>
#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::sched {

std::vector<PipelineStep> pipeline_order(std::int64_t p, std::int64_t v, std::int64_t m, std::int64_t stage) {
  std::vector<PipelineStep> out;
  if (v == 1) {
    // 1F1B: stage s runs p - s - 1 warm-up forwards, then one forward and one backward alternately.
    const std::int64_t warmup = std::min(p - stage - 1, m);
    std::int64_t f = 0, b = 0;
    for (; f < warmup; ++f) out.push_back({true, 0, f});
    while (f < m) {
      out.push_back({true, 0, f++});
      out.push_back({false, 0, b++});
    }
    while (b < m) out.push_back({false, 0, b++});
    return out;
  }
  // Interleaved (Megatron-Core forward_backward_pipelining_with_interleaving):
  // virtual micro-batch k runs chunk (k / p) % v of micro-batch (k / (p v)) p + k % p;
  // backward chunks go in reverse.
  const std::int64_t total = m * v;
  const std::int64_t warmup = std::min((p - stage - 1) * 2 + (v - 1) * p, total);
  auto forward_step = [&](std::int64_t k) { return PipelineStep{true, (k / p) % v, (k / (p * v)) * p + k % p}; };
  auto backward_step = [&](std::int64_t k) {
    return PipelineStep{false, v - 1 - (k / p) % v, (k / (p * v)) * p + k % p};
  };
  std::int64_t f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back(forward_step(f));
  while (f < total) {
    out.push_back(forward_step(f++));
    out.push_back(backward_step(b++));
  }
  while (b < total) out.push_back(backward_step(b++));
  return out;
}

// The same order in closed form: warm-up forwards 0..w-1, then forward w + j
// and backward j alternately, then the backwards left (1F1B is the
// interleaved rule with v = 1: warm-up p - s - 1, chunk 0, micro-batch k).
std::int64_t pipeline_warmup(std::int64_t p, std::int64_t v, std::int64_t m, std::int64_t stage) {
  return v == 1 ? std::min(p - stage - 1, m) : std::min((p - stage - 1) * 2 + (v - 1) * p, m * v);
}

PipelineOrder::PipelineOrder(std::int64_t p, std::int64_t v, std::int64_t m, std::int64_t stage)
    : p_(p), v_(v), total_(m * v), warmup_(pipeline_warmup(p, v, m, stage)) {}

PipelineStep PipelineOrder::step(std::int64_t i) const {
  const auto forward_step = [&](std::int64_t k) {
    return PipelineStep{true, (k / p_) % v_, (k / (p_ * v_)) * p_ + k % p_};
  };
  const auto backward_step = [&](std::int64_t k) {
    return PipelineStep{false, v_ - 1 - (k / p_) % v_, (k / (p_ * v_)) * p_ + k % p_};
  };
  if (i < warmup_) return forward_step(i);
  const std::int64_t j = i - warmup_;
  const std::int64_t steady = total_ - warmup_;  // forward-backward pairs
  if (j < 2 * steady) return j % 2 == 0 ? forward_step(warmup_ + j / 2) : backward_step(j / 2);
  return backward_step(steady + (j - 2 * steady));
}

void check_pipeline(const PipelineSpec& s) {
  const std::int64_t p = s.stages, v = s.virtual_stages, m = s.micro_batches;
  if (p < 1 || v < 1 || m < 1) throw Error(ErrorKind::Input, "pipeline sizes must be positive", "parallelism.pp");
  if (v > 1 && m % p != 0)
    throw Error(ErrorKind::Input,
                fmt::format("interleaved pipelining needs the {} micro-batches to be a multiple of pp {}", m, p),
                "parallelism.vpp");
  MOEPLAN_CHECK(s.chunks.empty() || static_cast<std::int64_t>(s.chunks.size()) == p * v,
                "a pipeline's per-chunk costs name every virtual stage");
}

std::size_t pipeline_tasks(const PipelineSpec& s) {
  const auto p = static_cast<std::size_t>(s.stages), v = static_cast<std::size_t>(s.virtual_stages),
             m = static_cast<std::size_t>(s.micro_batches);
  const std::size_t compute = 2 * p * v * m;
  // Every forward but the last virtual stage's sends on, every backward but the first's sends back.
  const std::size_t sends = p > 1 ? compute - 2 * m : 0;
  return compute + sends + (s.optimizer_ms > 0 ? p : 0);
}

BuiltSchedule build_pipeline(const PipelineSpec& s) {
  check_pipeline(s);
  const std::int64_t p = s.stages, v = s.virtual_stages, m = s.micro_batches;
  dag::TaskGraphBuilder b;
  b.set_limit(graph_limit(s.limits));
  std::vector<dag::ResourceId> compute, send;
  std::vector<dag::ResourceId> optimizer;
  for (std::int64_t r = 0; r < p; ++r) {
    compute.push_back(b.add_resource({"compute", static_cast<std::int32_t>(r), dag::DispatchPolicy::InOrder}));
    send.push_back(b.add_resource({"p2p", static_cast<std::int32_t>(r), dag::DispatchPolicy::InOrder}));
    if (s.optimizer_ms > 0)
      optimizer.push_back(b.add_resource({"dp", static_cast<std::int32_t>(r), dag::DispatchPolicy::InOrder}));
  }
  std::vector<std::vector<dag::TaskId>> stage_tasks(static_cast<std::size_t>(p));
  // Model chunk c of stage r holds virtual stage c p + r; activations flow 0 .. p v - 1.
  // (forward, virtual stage, mb) -> its task, and its P2P to the next virtual
  // stage (flat tables: the joint search builds many pipelines).
  constexpr dag::TaskId kNone = std::numeric_limits<dag::TaskId>::max();
  const std::size_t per_phase = static_cast<std::size_t>(p * v * m);
  auto slot = [&](bool forward, std::int64_t vstage, std::int64_t mb) {
    return (forward ? 0 : per_phase) + static_cast<std::size_t>(vstage * m + mb);
  };
  std::vector<dag::TaskId> done(2 * per_phase, kNone), sent(2 * per_phase, kNone);
  // Tasks are added stage by stage in each stage's order; dependencies are added after all exist.
  struct Pending {
    dag::TaskId task;
    bool forward;
    std::int64_t vstage, mb;
  };
  std::vector<Pending> pending;
  for (std::int64_t r = 0; r < p; ++r, b.progress(static_cast<std::size_t>(r), static_cast<std::size_t>(p)))
    for (const PipelineStep& step : pipeline_order(p, v, m, r)) {
      const std::int64_t vstage = step.chunk * p + r;
      dag::TaskSpec t;
      // Compiled format strings: names are most of a pipeline's build time, and the searches build many.
      const std::string name =
          fmt::format(FMT_COMPILE("{} c{} mb{}"), step.forward ? "F" : "B", step.chunk, step.micro_batch);
      t.name = name;
      t.kind = dag::TaskKind::Compute;
      t.op = model::OpClass::Gemm;
      const PipelineChunkCost& cost = s.chunks.empty() ? s.chunk : s.chunks.at(static_cast<std::size_t>(vstage));
      t.duration_ms = step.forward ? cost.forward_ms : cost.backward_ms;
      t.size = step.forward ? cost.forward_flops : cost.backward_flops;
      t.resources = {compute[static_cast<std::size_t>(r)]};
      t.phase = step.forward ? dag::Phase::Forward : dag::Phase::Backward;
      t.layer = static_cast<std::int32_t>(vstage);
      t.micro_batch = static_cast<std::int32_t>(step.micro_batch);
      const dag::TaskId id = b.add_task(t);
      stage_tasks[static_cast<std::size_t>(r)].push_back(id);
      done[slot(step.forward, vstage, step.micro_batch)] = id;
      pending.push_back({id, step.forward, vstage, step.micro_batch});
      // Send the activation forward (or the gradient backward) unless at the end of the line.
      const bool last = step.forward ? vstage == p * v - 1 : vstage == 0;
      if (!last && p > 1) {
        dag::TaskSpec msg;
        const std::string msg_name =
            fmt::format(FMT_COMPILE("{} send c{} mb{}"), step.forward ? "act" : "grad", step.chunk, step.micro_batch);
        msg.name = msg_name;
        msg.kind = dag::TaskKind::Communication;
        msg.op = model::OpClass::P2P;
        msg.duration_ms = cost.p2p_ms;
        msg.size = cost.p2p_bytes;
        msg.resources = {send[static_cast<std::size_t>(r)]};
        msg.group_size = 2;
        msg.phase = t.phase;
        msg.layer = t.layer;
        msg.micro_batch = t.micro_batch;
        const dag::TaskId m_id = b.add_task(msg);
        stage_tasks[static_cast<std::size_t>(r)].push_back(m_id);
        b.add_dependency(id, m_id);
        sent[slot(step.forward, vstage, step.micro_batch)] = m_id;
      }
    }
  for (const Pending& x : pending) {
    auto input = [&](bool forward, std::int64_t vstage) {
      const std::size_t i = slot(forward, vstage, x.mb);
      MOEPLAN_CHECK(sent[i] != kNone || done[i] != kNone, "every pipeline step's producer is issued");
      return sent[i] != kNone ? sent[i] : done[i];
    };
    if (x.forward) {
      if (x.vstage > 0) b.add_dependency(input(true, x.vstage - 1), x.task);
    } else {
      // Backward needs this virtual stage's forward and the gradient from the next one.
      MOEPLAN_CHECK(done[slot(true, x.vstage, x.mb)] != kNone, "a backward step's forward is issued");
      b.add_dependency(done[slot(true, x.vstage, x.mb)], x.task);
      if (x.vstage < p * v - 1) b.add_dependency(input(false, x.vstage + 1), x.task);
    }
  }
  // The optimizer step of a stage waits for everything the stage did.
  for (std::int64_t r = 0; r < p && s.optimizer_ms > 0; ++r) {
    dag::TaskSpec opt;
    opt.name = "optimizer";
    opt.kind = dag::TaskKind::Communication;
    opt.op = model::OpClass::ReduceScatter;
    opt.duration_ms = s.optimizer_ms;
    opt.size = s.optimizer_bytes;
    opt.resources = {optimizer[static_cast<std::size_t>(r)]};
    opt.phase = dag::Phase::Backward;
    const dag::TaskId id = b.add_task(opt);
    for (dag::TaskId t : stage_tasks[static_cast<std::size_t>(r)]) b.add_dependency(t, id);
  }
  return BuiltSchedule{std::move(b).build(), v > 1 ? "interleaved-1f1b" : "1f1b", p, {}, {}};
}

}  // namespace moeplan::sched
