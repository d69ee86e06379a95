#include <moeplan/plan/pipeline_times.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include <moeplan/core/error.hpp>
#include <moeplan/sim/analysis.hpp>

namespace moeplan::plan {

std::optional<PipelineTimes> pipeline_times(const sched::PipelineSpec& s) {
  sched::check_pipeline(s);
  // build_pipeline's limit checks (TaskGraphBuilder: the running estimate of
  // the tasks to come, then the count) cannot trip below half the limit: a
  // stage holds at most 4 v m tasks (computes and sends), the whole at least
  // 2 p v m, so the estimate after any stage is at most twice the total.
  const std::size_t max_tasks = s.limits.max_graph_tasks();
  if (max_tasks != 0 && sched::pipeline_tasks(s) > max_tasks / 2) return std::nullopt;
  const std::int64_t p = s.stages, v = s.virtual_stages, m = s.micro_batches;
  const std::int64_t last_vstage = p * v - 1;
  const std::size_t per_phase = static_cast<std::size_t>(p * v * m);
  auto slot = [&](bool forward, std::int64_t vstage, std::int64_t mb) {
    return (forward ? 0 : per_phase) + static_cast<std::size_t>(vstage * m + mb);
  };
  // End of each (direction, virtual stage, micro-batch)'s compute task and of
  // its send; negative: not yet run (every time is >= 0).
  std::vector<double> done(2 * per_phase, -1.0), sent(2 * per_phase, -1.0);
  std::vector<std::vector<sched::PipelineStep>> order(static_cast<std::size_t>(p));
  for (std::int64_t r = 0; r < p; ++r) order[static_cast<std::size_t>(r)] = sched::pipeline_order(p, v, m, r);
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<double> compute_free(static_cast<std::size_t>(p), 0.0), send_free(static_cast<std::size_t>(p), 0.0);
  // The end of each stage's last task, for its optimizer step.
  std::vector<double> stage_end(static_cast<std::size_t>(p), 0.0);
  std::vector<std::pair<double, double>> stage0_compute;
  double makespan = 0;
  // A producer's output as its consumer sees it: the send when there is one, else the task.
  auto input = [&](bool forward, std::int64_t vstage, std::int64_t mb) {
    const std::size_t i = slot(forward, vstage, mb);
    return sent[i] >= 0 ? sent[i] : done[i];
  };
  std::size_t left = 2 * per_phase;
  while (left > 0) {
    std::size_t progressed = 0;
    for (std::int64_t r = 0; r < p; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      const std::vector<sched::PipelineStep>& steps = order[ri];
      // Run the stage's in-order stream until its head waits for another stage.
      for (; next[ri] < steps.size(); ++next[ri]) {
        const sched::PipelineStep& step = steps[next[ri]];
        const std::int64_t vstage = step.chunk * p + r;
        double ready = 0;
        if (step.forward) {
          if (vstage > 0) {
            const double in = input(true, vstage - 1, step.micro_batch);
            if (in < 0) break;
            ready = in;
          }
        } else {
          ready = done[slot(true, vstage, step.micro_batch)];
          MOEPLAN_CHECK(ready >= 0, "a backward step's forward runs before it on its stage");
          if (vstage < last_vstage) {
            const double in = input(false, vstage + 1, step.micro_batch);
            if (in < 0) break;
            ready = std::max(ready, in);
          }
        }
        const sched::PipelineChunkCost& cost =
            s.chunks.empty() ? s.chunk : s.chunks[static_cast<std::size_t>(vstage)];
        const double start = std::max(ready, compute_free[ri]);
        const double end = start + (step.forward ? cost.forward_ms : cost.backward_ms);
        compute_free[ri] = end;
        done[slot(step.forward, vstage, step.micro_batch)] = end;
        stage_end[ri] = std::max(stage_end[ri], end);
        makespan = std::max(makespan, end);
        if (r == 0) stage0_compute.emplace_back(start, end);
        const bool line_end = step.forward ? vstage == last_vstage : vstage == 0;
        if (!line_end && p > 1) {
          // The stage's sends go out in its compute order, each after its task.
          const double send_start = std::max(end, send_free[ri]);
          const double send_end = send_start + cost.p2p_ms;
          send_free[ri] = send_end;
          sent[slot(step.forward, vstage, step.micro_batch)] = send_end;
          stage_end[ri] = std::max(stage_end[ri], send_end);
          makespan = std::max(makespan, send_end);
        }
        ++progressed;
        --left;
      }
    }
    // Megatron's orders never wait in a circle (the engine would report a deadlock).
    MOEPLAN_CHECK(progressed > 0, "a pipeline order waits in a circle");
  }
  if (s.optimizer_ms > 0)
    for (double end : stage_end) makespan = std::max(makespan, end + s.optimizer_ms);
  PipelineTimes out;
  out.makespan_ms = makespan;
  out.stage0_compute_busy_ms = sim::covered_ms(stage0_compute);
  return out;
}

}  // namespace moeplan::plan
