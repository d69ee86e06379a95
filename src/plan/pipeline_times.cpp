#include <moeplan/plan/pipeline_times.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include <moeplan/core/error.hpp>

namespace moeplan::plan {

namespace {

// Scratch reused by every call of a thread: a search prices thousands of
// pipelines, and allocating (and faulting in) these per call was a third of
// its time.
struct Scratch {
  std::vector<double> done, sent;
  std::vector<sched::PipelineOrder> order;
  std::vector<std::int64_t> next;
  std::vector<double> compute_free, send_free, stage_end;
};

// The recurrence over every step of the spec's pipeline.
PipelineTimes recurrence(const sched::PipelineSpec& s) {
  const std::int64_t m = s.micro_batches;
  thread_local Scratch w;
  const std::int64_t p = s.stages, v = s.virtual_stages;
  const std::int64_t last_vstage = p * v - 1;
  const std::size_t per_phase = static_cast<std::size_t>(p * v * m);
  auto slot = [&](bool forward, std::int64_t vstage, std::int64_t mb) {
    return (forward ? 0 : per_phase) + static_cast<std::size_t>(vstage * m + mb);
  };
  // End of each (direction, virtual stage, micro-batch)'s compute task and of
  // its send; negative: not yet run (every time is >= 0).
  w.done.assign(2 * per_phase, -1.0);
  w.sent.assign(2 * per_phase, -1.0);
  w.order.clear();
  for (std::int64_t r = 0; r < p; ++r) w.order.emplace_back(p, v, m, r);
  const auto stages = static_cast<std::size_t>(p);
  w.next.assign(stages, 0);
  w.compute_free.assign(stages, 0.0);
  w.send_free.assign(stages, 0.0);
  // The end of each stage's last task, for its optimizer step.
  w.stage_end.assign(stages, 0.0);
  // Stage 0's compute intervals come in start order (its stream is in order):
  // merged as they come, they sum as sim::covered_ms sums them sorted.
  double covered = 0, open_start = 0, open_end = 0;
  bool open = false;
  double makespan = 0;
  // A producer's output as its consumer sees it: the send when there is one, else the task.
  auto input = [&](bool forward, std::int64_t vstage, std::int64_t mb) {
    const std::size_t i = slot(forward, vstage, mb);
    return w.sent[i] >= 0 ? w.sent[i] : w.done[i];
  };
  std::size_t left = 2 * per_phase;
  while (left > 0) {
    std::size_t progressed = 0;
    for (std::int64_t r = 0; r < p; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      const sched::PipelineOrder& order = w.order[ri];
      // Run the stage's in-order stream until its head waits for another stage.
      for (; w.next[ri] < order.size(); ++w.next[ri]) {
        const sched::PipelineStep step = order.step(w.next[ri]);
        const std::int64_t vstage = step.chunk * p + r;
        double ready = 0;
        if (step.forward) {
          if (vstage > 0) {
            const double in = input(true, vstage - 1, step.micro_batch);
            if (in < 0) break;
            ready = in;
          }
        } else {
          ready = w.done[slot(true, vstage, step.micro_batch)];
          MOEPLAN_CHECK(ready >= 0, "a backward step's forward runs before it on its stage");
          if (vstage < last_vstage) {
            const double in = input(false, vstage + 1, step.micro_batch);
            if (in < 0) break;
            ready = std::max(ready, in);
          }
        }
        const sched::PipelineChunkCost& cost =
            s.chunks.empty() ? s.chunk : s.chunks[static_cast<std::size_t>(vstage)];
        const double start = std::max(ready, w.compute_free[ri]);
        const double end = start + (step.forward ? cost.forward_ms : cost.backward_ms);
        w.compute_free[ri] = end;
        w.done[slot(step.forward, vstage, step.micro_batch)] = end;
        w.stage_end[ri] = std::max(w.stage_end[ri], end);
        makespan = std::max(makespan, end);
        if (r == 0 && end > start) {
          if (open && start <= open_end) {
            open_end = std::max(open_end, end);
          } else {
            if (open) covered += open_end - open_start;
            open_start = start;
            open_end = end;
            open = true;
          }
        }
        const bool line_end = step.forward ? vstage == last_vstage : vstage == 0;
        if (!line_end && p > 1) {
          // The stage's sends go out in its compute order, each after its task.
          const double send_start = std::max(end, w.send_free[ri]);
          const double send_end = send_start + cost.p2p_ms;
          w.send_free[ri] = send_end;
          w.sent[slot(step.forward, vstage, step.micro_batch)] = send_end;
          w.stage_end[ri] = std::max(w.stage_end[ri], send_end);
          makespan = std::max(makespan, send_end);
        }
        ++progressed;
        --left;
      }
    }
    // Megatron's orders never wait in a circle (the engine would report a deadlock).
    MOEPLAN_CHECK(progressed > 0, "a pipeline order waits in a circle");
  }
  if (open) covered += open_end - open_start;
  if (s.optimizer_ms > 0)
    for (double end : w.stage_end) makespan = std::max(makespan, end + s.optimizer_ms);
  PipelineTimes out;
  out.makespan_ms = makespan;
  out.stage0_compute_busy_ms = covered;
  return out;
}

}  // namespace

std::optional<PipelineTimes> pipeline_times(const sched::PipelineSpec& s) {
  sched::check_pipeline(s);
  // build_pipeline's limit checks (TaskGraphBuilder: the running estimate of
  // the tasks to come, then the count) cannot trip below half the limit: a
  // stage holds at most 4 v m tasks (computes and sends), the whole at least
  // 2 p v m, so the estimate after any stage is at most twice the total.
  const std::size_t max_tasks = s.limits.max_graph_tasks();
  if (max_tasks != 0 && sched::pipeline_tasks(s) > max_tasks / 2) return std::nullopt;
  return recurrence(s);
}

}  // namespace moeplan::plan
