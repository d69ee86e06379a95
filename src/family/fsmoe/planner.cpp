#include <moeplan/family/fsmoe/planner.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/parallel.hpp>
#include <moeplan/cost/bus_factor.hpp>
#include <moeplan/cost/expert_pricing.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::fsmoe {
namespace {


// Eq. 1's line of a collective of n bytes on a group: an AlltoAll across nodes
// has two parts that run at once, and the closed forms take the one that is
// longer for the whole (unchunked) tensor.
AlphaBeta line(const cost::CostModel& costs, model::OpClass op, const cost::GroupShape& group, double n) {
  if (n <= 0 || group.size <= 1) return {0, 0, 0};
  const cost::LinearModel l = costs.lines_for(op, group).dominant(n);
  return {l.alpha_ms, l.beta_ms_per_unit, n};
}

// Gradient-AllReduce over DP: t(n) = alpha + n beta and its inverse (section 5.1).
struct AllReduceLine {
  double alpha_ms = 0, beta_ms = 0;
  double time_ms(double bytes) const { return bytes > 0 ? alpha_ms + bytes * beta_ms : 0.0; }
  double inverse_bytes(double ms) const { return beta_ms > 0 ? std::max(0.0, (ms - alpha_ms) / beta_ms) : 0.0; }
};

AllReduceLine allreduce_line(const model::ScenarioSpec& s, const cost::CostModel& costs) {
  const model::ParallelSpec& p = s.parallel;
  if (p.dp <= 1) return {};
  const cost::LinearModel l =
      costs.lines_for(model::OpClass::AllReduce, cost::strided_group_shape(p.dp, p.tp * p.cp, s.cluster)).main;
  return {l.alpha_ms, l.beta_ms_per_unit};
}

// Dense overlappable time of a generalized layer's backward: attention, its TP
// collectives (intra) and the gate, during which the inter link is free.
double dense_overlap_ms(const model::ScenarioSpec& s, const cost::CostModel& costs) {
  const auto att = cost::attention_layer_sizes(s.model, s.parallel, s.workload);
  const auto moe = cost::moe_layer_sizes(s.model, s.parallel, s.workload);
  const model::ParallelSpec& p = s.parallel;
  const cost::GroupShape tp_group = cost::strided_group_shape(p.tp, 1, s.cluster);
  const std::int64_t local_seq = std::max<std::int64_t>(1, s.workload.seq_len / p.cp);
  double ms = costs.attention(s.model, local_seq, local_seq, att.backward_flops).value +
              costs.compute(model::OpClass::Gemm, 2 * moe.gating_forward_flops).value;
  if (p.tp > 1) {
    ms += costs.communication(model::OpClass::AllGather, tp_group, att.tp_allgather_bytes).value;
    ms += p.sequence_parallel
              ? costs.communication(model::OpClass::ReduceScatter, tp_group, att.tp_reducescatter_bytes).value
              : costs.communication(model::OpClass::AllReduce, tp_group, att.tp_allreduce_bytes).value;
  }
  return ms;
}

// The closed forms need t_exp(r) = alpha + (n / r) beta. A GEMM shape model is
// not a line in the FLOPs (whole waves), so the line is fitted to it, by least
// squares, at the chunks the planner can choose: r in allowed_degrees and the
// released solver's powers of two (docs/cost-model.md, "GEMM shape model").
// A negative intercept is refitted through the origin, as cost::fit_profile does.
AlphaBeta shape_fitted_expert_line(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                   const cost::MoeLayerSizes& sizes, bool backward, double n_forward) {
  std::vector<std::int64_t> degrees = allowed_degrees(expert_capacity_tokens(s));
  for (std::int64_t r : released_solver_degrees()) degrees.push_back(r);
  std::sort(degrees.begin(), degrees.end());
  degrees.erase(std::unique(degrees.begin(), degrees.end()), degrees.end());
  const double n = backward ? 2.0 * n_forward : n_forward;
  if (n <= 0) return {0, 0, 0};
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::int64_t r : degrees) {
    const double x = n / as_double(r);
    const double y = cost::expert_ffn_time(costs, s.model, s.parallel, sizes, backward, as_double(r)).value;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double k = as_double(static_cast<std::int64_t>(degrees.size()));
  const double det = k * sxx - sx * sx;
  double beta = det > 0 ? (k * sxy - sx * sy) / det : 0.0;
  double alpha = (sy - beta * sx) / k;
  if (alpha < 0 || det <= 0) {
    alpha = 0;
    beta = sxy / sxx;
  }
  return {alpha, std::max(beta, 0.0), n};
}

}  // namespace

MoeLayerModel fsmoe_layer_model(const model::ScenarioSpec& s, const cost::CostModel& costs, bool backward,
                                double t_gar_ms) {
  const model::ParallelSpec& p = s.parallel;
  const auto sizes = cost::moe_layer_sizes(s.model, p, s.workload);
  const cost::GroupShape ep_group = cost::strided_group_shape(p.ep, p.etp, s.cluster);
  const cost::GroupShape etp_group = cost::strided_group_shape(p.etp, 1, s.cluster);
  MoeLayerModel m;
  m.a2a = line(costs, model::OpClass::A2A, ep_group, sizes.dispatch_bytes);
  m.ag = line(costs, model::OpClass::AllGather, etp_group, sizes.etp_allgather_bytes);
  m.rs = line(costs, model::OpClass::ReduceScatter, etp_group, sizes.etp_reducescatter_bytes);
  // alpha_exp, beta_exp: the GEMM line times the expert's GEMMs (section 4.1); n = FLOPs of one GEMM.
  const double gemms = s.model.moe.expert_type == model::FfnType::GeluFfn ? 2.0 : 3.0;
  if (costs.gemm_shape_model()) {
    m.exp = shape_fitted_expert_line(s, costs, sizes, backward, sizes.expert_forward_flops / gemms);
  } else {
    const cost::LinearModel gemm = costs.line_for(model::OpClass::Gemm, model::LinkClass::Local, 1);
    m.exp = {gemms * gemm.alpha_ms, gemms * gemm.beta_ms_per_unit, sizes.expert_forward_flops / gemms};
    if (backward) {
      // Section 4.4: expert cost doubled in backward (startup and work; beta is the hardware's).
      m.exp.alpha_ms *= 2;
      m.exp.n *= 2;
    }
  }
  m.t_gar_ms = backward ? t_gar_ms : 0.0;
  return m;
}

std::int64_t expert_capacity_tokens(const model::ScenarioSpec& s) {
  if (!s.model.moe.capacity_factor) return 0;
  const double tokens = as_double(s.workload.micro_batch_size * s.workload.seq_len);
  return static_cast<std::int64_t>(as_double(s.model.moe.top_k) * *s.model.moe.capacity_factor * tokens /
                                   as_double(s.model.moe.num_experts));
}

GradientPartition partition_gradients(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                      const std::vector<std::int64_t>& allowed, std::int64_t r_b,
                                      const EvolutionSettings& settings) {
  const std::size_t n = static_cast<std::size_t>(s.model.num_layers);
  const AllReduceLine ar = allreduce_line(s, costs);
  const MoeLayerModel bwd = fsmoe_layer_model(s, costs, true, 0);
  // Each layer's degree at its t_gar: brute_force_degree (equals Algorithm 1, tested), tabled.
  const GarDegreeTable degrees(bwd, allowed);
  const double olp_moe = overlappable_ms(bwd, as_double(r_b));
  const double olp_dense = dense_overlap_ms(s, costs);
  // The backward pass reaches layers from the last to the first; a layer's
  // gradients join the pending pool once its backward is done.
  auto run = [&](const std::vector<double>& share) {
    GradientPartition out;
    out.during_moe_bytes.assign(n, 0);
    out.during_dense_bytes.assign(n, 0);
    out.step1_bytes.assign(n, 0);
    out.step2_bytes.assign(n, 0);
    out.degree_backward.assign(n, r_b);
    double pool = 0;
    for (std::size_t p = 0; p < n; ++p) {
      const std::size_t layer = n - 1 - p;
      // Step 1 (Eq. 3; Eq. 4's carry is the pool): fill the overlappable time.
      const double first = std::min(pool, ar.inverse_bytes(olp_moe + olp_dense));
      const double in_moe = std::min(first, ar.inverse_bytes(olp_moe));
      pool -= first;
      // Step 2 (Eq. 5): a share of what is still pending becomes extra t_gar here.
      const double extra = std::clamp(share[p], 0.0, 1.0) * pool;
      pool -= extra;
      out.step1_bytes[layer] = first;
      out.step2_bytes[layer] = extra;
      out.during_moe_bytes[layer] = in_moe + extra;
      out.during_dense_bytes[layer] = first - in_moe;
      const DegreeChoice c = degrees.best(ar.time_ms(out.during_moe_bytes[layer]));
      out.objective_ms += c.t_moe_ms;
      out.degree_backward[layer] = c.r;
      pool += fsmoe::generalized_layer_gradient_bytes(s, static_cast<std::int32_t>(layer));
    }
    out.tail_bytes = pool;
    out.objective_ms += ar.time_ms(pool);
    return out;
  };
  std::vector<double> none(n, 0.0);
  if (ar.beta_ms <= 0 || n == 0) return run(none);  // no DP: nothing to all-reduce
  if (!settings.step2) return run(none);
  // Differential evolution (rand/1/bin), seeded: the same answer for the same input.
  std::mt19937_64 rng(settings.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::size_t np = static_cast<std::size_t>(std::max(4, settings.population));
  std::vector<std::vector<double>> pop(np, none);
  std::vector<double> score(np);
  for (std::size_t i = 0; i < np; ++i) {
    if (i > 0)  // member 0 is Step 1 alone: Step 2 can only improve on it
      for (double& x : pop[i]) x = unit(rng);
    score[i] = run(pop[i]).objective_ms;
  }
  for (std::int32_t g = 0; g < settings.generations; ++g)
    for (std::size_t i = 0; i < np; ++i) {
      std::size_t a, b, c;
      do a = rng() % np;
      while (a == i);
      do b = rng() % np;
      while (b == i || b == a);
      do c = rng() % np;
      while (c == i || c == a || c == b);
      std::vector<double> trial = pop[i];
      const std::size_t forced = rng() % n;
      for (std::size_t d = 0; d < n; ++d)
        if (d == forced || unit(rng) < settings.crossover)
          trial[d] = std::clamp(pop[a][d] + settings.mutation * (pop[b][d] - pop[c][d]), 0.0, 1.0);
      const double t = run(trial).objective_ms;
      if (t <= score[i]) {
        pop[i] = std::move(trial);
        score[i] = t;
      }
    }
  const std::size_t best = static_cast<std::size_t>(std::min_element(score.begin(), score.end()) - score.begin());
  return run(pop[best]);
}

fsmoe::FsMoeKnobs fsmoe_knobs(const FsMoePlan& plan, const std::string& schedule) {
  fsmoe::FsMoeKnobs k;
  k.schedule = schedule;
  k.multi_rank = plan.multi_rank;
  if (schedule == "fsmoe" || schedule == "fsmoe-no-iio") {
    k.degree_forward = plan.degrees.forward.r;
    k.degree_backward = plan.degrees.backward.r;
    k.degree_backward_per_layer = plan.partition.degree_backward;
    k.grad_during_moe_bytes = plan.partition.during_moe_bytes;
    k.grad_during_dense_bytes = plan.partition.during_dense_bytes;
  } else if (schedule != "none") {
    k.degree_forward = plan.tutel_degree;
    k.degree_backward = plan.tutel_degree;
  }
  return k;
}

namespace {

// A degree the scenario fixes: it must be one Tutel's runtime accepts.
std::int64_t fixed_degree(std::int64_t r, const std::vector<std::int64_t>& allowed, const char* field) {
  if (std::find(allowed.begin(), allowed.end(), r) == allowed.end()) {
    std::string list;
    for (std::int64_t a : allowed) list += (list.empty() ? "" : " ") + std::to_string(a);
    throw Error(ErrorKind::Input,
                fmt::format("r = {} is not an allowed degree: 1..32 dividing the expert capacity ({})", r, list),
                field);
  }
  return r;
}

DegreeChoice at_degree(const MoeLayerModel& m, std::int64_t r) {
  const double rr = as_double(r);
  return {r, moe_time_ms(m, rr), case_at(m, rr)};
}

}  // namespace

FsMoePlan plan_fsmoe(const model::ScenarioSpec& s, const cost::CostModel& costs,
                     const std::vector<std::string>& schedules, unsigned threads) {
  FsMoePlan out;
  out.multi_rank = s.schedule.multi_rank;  // the closed forms stay symmetric; simulated graphs follow the mode
  const std::vector<std::int64_t> allowed = allowed_degrees(expert_capacity_tokens(s));
  const ReleasedSolverRules rules{s.schedule.fsmoe_released_solver_rules, 1.0};
  std::vector<std::int64_t> degrees = rules.enabled ? released_solver_degrees() : allowed;
  const MoeLayerModel forward = fsmoe_layer_model(s, costs, false), backward = fsmoe_layer_model(s, costs, true);
  out.degrees = choose_degrees(forward, backward, allowed, rules);
  // The scenario may fix a phase's degree (degree_forward / degree_backward, or
  // degree for both): Algorithm 1 then does not choose it.
  const std::optional<std::int64_t> fwd = s.schedule.degree_forward ? s.schedule.degree_forward : s.schedule.degree;
  const std::optional<std::int64_t> bwd = s.schedule.degree_backward ? s.schedule.degree_backward : s.schedule.degree;
  if (fwd)
    out.degrees.forward = at_degree(
        forward, fixed_degree(*fwd, allowed, s.schedule.degree_forward ? "schedule.degree_forward" : "schedule.degree"));
  if (bwd) {
    out.degrees.backward = at_degree(
        backward,
        fixed_degree(*bwd, allowed, s.schedule.degree_backward ? "schedule.degree_backward" : "schedule.degree"));
    degrees = {out.degrees.backward.r};  // every layer's backward at the fixed degree
  }
  out.overlap_gap_ms = overlappable_ms(backward, as_double(out.degrees.backward.r));
  out.partition = partition_gradients(s, costs, degrees, out.degrees.backward.r);
  if (rules.enabled && !bwd && out.degrees.forward.r == 1)  // the released solver forces backward r = 1 with forward 1
    std::fill(out.partition.degree_backward.begin(), out.partition.degree_backward.end(), 1);
  // PipeMoE's adaptive degree for Tutel: the single r that simulates fastest
  // (or the scenario's degree).
  const std::vector<std::int64_t> tutel_tried =
      s.schedule.degree ? std::vector<std::int64_t>{fixed_degree(*s.schedule.degree, allowed, "schedule.degree")}
                        : allowed;
  std::vector<double> tutel_ms(tutel_tried.size());
  const unsigned tutel_started = parallel_for(tutel_tried.size(), threads, [&](std::size_t i) {
    fsmoe::FsMoeKnobs k;
    k.schedule = "tutel";
    k.degree_forward = k.degree_backward = tutel_tried[i];
    k.multi_rank = out.multi_rank;
    tutel_ms[i] = plan::evaluate(fsmoe::build_fsmoe(s, costs, k)).iteration_ms;
  });
  out.threads.record(threads, tutel_tried.size(), tutel_started);
  const std::size_t fastest =
      static_cast<std::size_t>(std::min_element(tutel_ms.begin(), tutel_ms.end()) - tutel_ms.begin());
  out.tutel_degree = tutel_tried[fastest];  // ties: the smallest r
  for (const std::string& name : schedules) out.knobs.push_back(fsmoe_knobs(out, name));
  out.schedules.resize(schedules.size());
  const unsigned started = parallel_for(schedules.size(), threads, [&](std::size_t i) {
    out.schedules[i] = plan::evaluate(fsmoe::build_fsmoe(s, costs, out.knobs[i]));
  });
  out.threads.record(threads, schedules.size(), started);
  return out;
}

}  // namespace moeplan::fsmoe
