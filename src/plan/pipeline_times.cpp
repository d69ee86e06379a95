#include <moeplan/plan/pipeline_times.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <moeplan/core/error.hpp>

namespace moeplan::plan {

namespace {

// Where a (direction, virtual stage, micro-batch)'s end is kept in Scratch's
// done and sent: forwards first, then backwards, by virtual stage then micro-batch.
std::size_t slot_of(const sched::PipelineSpec& s, bool forward, std::int64_t vstage, std::int64_t mb) {
  const auto per_phase = static_cast<std::size_t>(s.stages * s.virtual_stages * s.micro_batches);
  return (forward ? 0 : per_phase) + static_cast<std::size_t>(vstage * s.micro_batches + mb);
}

// A virtual stage's chunk costs: its own, or the spec's one for every chunk.
const sched::PipelineChunkCost& chunk_cost(const sched::PipelineSpec& s, std::int64_t vstage) {
  return s.chunks.empty() ? s.chunk : s.chunks[static_cast<std::size_t>(vstage)];
}

// check_pipeline's errors; false when the graph would come within a factor
// of 2 of the spec's task limit (build_pipeline decides there). Its limit
// checks (TaskGraphBuilder: the running estimate of the tasks to come, then
// the count) cannot trip below half the limit: a stage holds at most 4 v m
// tasks (computes and sends), the whole at least 2 p v m, so the estimate
// after any stage is at most twice the total.
bool ours_to_run(const sched::PipelineSpec& s) {
  sched::check_pipeline(s);
  const std::size_t max_tasks = s.limits.max_graph_tasks();
  return max_tasks == 0 || sched::pipeline_tasks(s) <= max_tasks / 2;
}

// Scratch reused by every call of a thread: a search prices thousands of
// pipelines, and allocating (and faulting in) these per call was a third of
// its time.
struct Scratch {
  std::vector<double> done, sent;
  std::vector<sched::PipelineOrder> order;
  std::vector<std::int64_t> next;
  std::vector<double> compute_free, send_free, stage_end;
};

Scratch& scratch() {
  thread_local Scratch w;
  return w;
}

// The recurrence over every step of the spec's pipeline; the ends of every
// step and send stay in scratch() for steady_pipeline_times to read.
PipelineTimes recurrence(const sched::PipelineSpec& s) {
  const std::int64_t m = s.micro_batches;
  Scratch& w = scratch();
  const std::int64_t p = s.stages, v = s.virtual_stages;
  const std::int64_t last_vstage = p * v - 1;
  const std::size_t per_phase = static_cast<std::size_t>(p * v * m);
  auto slot = [&](bool forward, std::int64_t vstage, std::int64_t mb) { return slot_of(s, forward, vstage, mb); };
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
        const sched::PipelineChunkCost& cost = chunk_cost(s, vstage);
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

// A run of the recurrence on fewer micro-batches, checked for a period.
struct Probe {
  PipelineTimes times;
  bool periodic = false;
  double period_ms = 0;  // what one period adds to every later end
};

// How far a step reads in its pipeline's order, counted in the pairs (a
// forward and a backward step) of each stage's steady region; stage r's pair j
// is its forward w_r + j and backward j (sched::PipelineOrder, w_r its
// warm-up). Derived from the order's closed form:
// - a backward reads its own stage's forward of the same chunk c and
//   micro-batch, w_r + (v - 1 - 2c) pp pairs back: at most stage 0's warm-up
//   plus (v - 1) pp;
// - a forward reads the stage before's (2 pairs back interleaved, 1 in 1F1B),
//   and stage 0 the last stage's previous chunk (pp - 2 pairs ahead); a
//   backward the next stage's (the same pair), and the last stage stage 0's
//   next chunk (pp back);
// - every step the step and the send before it on its stage (1 back).
struct Reach {
  std::int64_t back = 0;   // pairs back: what a later step can read of an earlier one
  std::int64_t ahead = 0;  // pairs ahead on another stage
};
Reach reach(std::int64_t p, std::int64_t v, std::int64_t warmup0) {
  if (v == 1) return {warmup0 + 2, 2};
  return {warmup0 + (v - 1) * p + 2, p + 2};
}

// Runs `s` (its micro-batch count already the probe's) and checks a cut c,
// the same pair of every stage, a reach before stage 0's cool-down (so no
// step before c reads a cool-down step): every end of the `back` pairs before
// c, on every stage, is the end `period_pairs` pairs earlier plus one common
// period. Those ends are all that steps from c on read (reach), so the state
// at c is the state a period earlier shifted; and in a max-plus recurrence
// (every end a maximum of earlier ends plus a fixed duration) a shifted state
// yields the same steps shifted: from c on every period adds the same time.
Probe probe_period(const sched::PipelineSpec& s, std::int64_t period_pairs, const Reach& r) {
  Probe out;
  out.times = recurrence(s);
  const Scratch& w = scratch();
  const std::int64_t p = s.stages, v = s.virtual_stages, m = s.micro_batches;
  const std::int64_t cut = m * v - sched::pipeline_warmup(p, v, m, 0) - r.ahead;
  if (cut - r.back - period_pairs < 0) return out;
  bool have_period = false;
  // Ends a few rounding errors apart are the same end: each end is a sum of
  // at most 4 p v m durations, each addition rounding by half an ulp.
  const auto same = [](double a, double b, double scale) { return std::abs(a - b) <= 1e-14 * scale; };
  const auto check = [&](std::size_t early, std::size_t late) {
    for (const std::vector<double>* ends : {&w.done, &w.sent}) {
      const double a = (*ends)[early], b = (*ends)[late];
      if ((a < 0) != (b < 0)) return false;
      if (a < 0) continue;  // no send (a line's end)
      if (!have_period) {
        out.period_ms = b - a;
        have_period = true;
      } else if (!same(b - a, out.period_ms, b)) {
        return false;
      }
    }
    return true;
  };
  for (std::int64_t stage = 0; stage < p; ++stage) {
    const sched::PipelineOrder order(p, v, m, stage);
    const std::int64_t warmup = sched::pipeline_warmup(p, v, m, stage);
    for (std::int64_t j = cut - r.back - period_pairs; j < cut - period_pairs; ++j)
      for (int half = 0; half < 2; ++half) {
        const sched::PipelineStep a = order.step(warmup + 2 * j + half);
        const sched::PipelineStep b = order.step(warmup + 2 * (j + period_pairs) + half);
        if (!check(slot_of(s, a.forward, a.chunk * p + stage, a.micro_batch),
                   slot_of(s, b.forward, b.chunk * p + stage, b.micro_batch)))
          return out;
      }
  }
  out.periodic = have_period && out.period_ms >= 0;
  return out;
}

}  // namespace

std::optional<PipelineTimes> pipeline_times(const sched::PipelineSpec& s) {
  if (!ours_to_run(s)) return std::nullopt;
  return recurrence(s);
}

std::optional<SteadyPipelineTimes> steady_pipeline_times(const sched::PipelineSpec& s) {
  if (!ours_to_run(s)) return std::nullopt;
  const std::int64_t p = s.stages, v = s.virtual_stages, m = s.micro_batches;
  // One period of Megatron's order: a micro-batch (1F1B), or p micro-batches
  // through every chunk (interleaved: the order's forward k and k + p v are
  // the same chunk, p micro-batches apart; sched::PipelineOrder).
  const std::int64_t period_mb = v == 1 ? 1 : p;
  const std::int64_t period_pairs = period_mb * v;
  const std::int64_t warmup0 = sched::pipeline_warmup(p, v, m, 0);
  const Reach r = reach(p, v, warmup0);
  SteadyPipelineTimes out;
  out.simulated_micro_batches = m;
  // Probes that allow the transient 0, 1 and 4 checked spans before the
  // checked one, while they run at most half the micro-batches (a pipeline
  // that is not periodic then costs at most 1.5 runs more).
  for (const std::int64_t allowance : {0, 1, 4}) {
    // Stage 0's pairs: its warm-up, the transient allowance, the checked span
    // and its period, and the reach ahead before its cool-down.
    const std::int64_t span = r.back + period_pairs;
    const std::int64_t pairs = warmup0 + allowance * span + span + r.ahead;
    std::int64_t probe_mb = (pairs + v - 1) / v;
    probe_mb += ((m - probe_mb) % period_mb + period_mb) % period_mb;  // the same count modulo a period
    if (2 * probe_mb > m) break;
    sched::PipelineSpec short_run = s;
    short_run.micro_batches = probe_mb;
    const Probe probe = probe_period(short_run, period_pairs, r);
    ++out.probes;
    if (!probe.periodic) continue;
    // The skipped periods: every end after them later by period_ms each;
    // stage 0 computes each period's steps, busy for their durations.
    const double periods = static_cast<double>((m - probe_mb) / period_mb);
    double stage0_period_ms = 0;
    for (std::int64_t c = 0; c < v; ++c) {
      const sched::PipelineChunkCost& cost = chunk_cost(s, c * p);
      stage0_period_ms += static_cast<double>(period_mb) * (cost.forward_ms + cost.backward_ms);
    }
    out.times.makespan_ms = probe.times.makespan_ms + periods * probe.period_ms;
    out.times.stage0_compute_busy_ms = probe.times.stage0_compute_busy_ms + periods * stage0_period_ms;
    out.extrapolated = true;
    out.simulated_micro_batches = probe_mb;
    return out;
  }
  out.times = recurrence(s);
  return out;
}

}  // namespace moeplan::plan
