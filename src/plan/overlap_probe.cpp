#include <moeplan/plan/overlap_probe.hpp>

#include <algorithm>
#include <optional>

#include <moeplan/core/error.hpp>
#include <moeplan/model/families.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/flowmoe_planner.hpp>
#include <moeplan/plan/fsmoe_model.hpp>
#include <moeplan/plan/fsmoe_planner.hpp>
#include <moeplan/sched/flowmoe.hpp>
#include <moeplan/sched/foldmoe.hpp>
#include <moeplan/sched/fsmoe.hpp>

namespace moeplan::plan {
namespace {

// s(1) + (n - 1) (s(2) - s(1)): the first layer's share, then each further layer's.
double linear_in_layers(double one, double two, std::int64_t layers) {
  return one + static_cast<double>(layers - 1) * (two - one);
}

// One run of a built probe: the forward's end and the iteration (no
// critical-path walk or summary: the joint search runs many of these).
ProbeTime time_of(const sched::BuiltSchedule& built) {
  const sim::Timeline tl = run_schedule(built);
  ProbeTime t;
  t.iteration_ms = tl.makespan_ms;
  for (dag::TaskId i = 0; i < built.graph.size(); ++i)
    if (built.graph.phase(i) == dag::Phase::Forward) t.forward_ms = std::max(t.forward_ms, tl.end_ms[i]);
  t.backward_ms = t.iteration_ms - t.forward_ms;
  return t;
}

// FSMoE's knobs on a probe as plan_fsmoe derives them for an FSMoE scenario
// (the closed forms' degree per phase, section 5's gradient partition), but
// PipeMoE's adaptive r for Tutel simulated at the allowed powers of two only
// (the released solver's kind of degree): plan_fsmoe simulates every allowed
// r up to 32, which took over half of the joint search's time.
FsMoePlan fsmoe_probe_plan(const model::ScenarioSpec& probe, const cost::CostModel& costs) {
  FsMoePlan out;
  const std::vector<std::int64_t> allowed = allowed_degrees(expert_capacity_tokens(probe));
  out.degrees = choose_degrees(fsmoe_layer_model(probe, costs, false), fsmoe_layer_model(probe, costs, true), allowed,
                               ReleasedSolverRules{false, 1.0});
  out.partition = partition_gradients(probe, costs, allowed, out.degrees.backward.r);
  std::optional<double> best_ms;
  for (std::int64_t r : allowed) {
    if ((r & (r - 1)) != 0) continue;  // not a power of two
    sched::FsMoeKnobs k;
    k.schedule = "tutel";
    k.degree_forward = k.degree_backward = r;
    const double ms = run_schedule(sched::build_fsmoe(probe, costs, k)).makespan_ms;
    if (!best_ms || ms < *best_ms) {  // ascending r: ties keep the smaller
      best_ms = ms;
      out.tutel_degree = r;
    }
  }
  return out;
}

// A probe built and timed; `schedule` "none" for the family's none.
ProbeTime run_probe(const model::ScenarioSpec& probe, const cost::CostModel& costs, const std::string& family,
                    const std::string& schedule, std::int64_t degree, const sched::FsMoeKnobs* fsmoe) {
  if (family == "foldmoe") return time_of(sched::build_foldmoe(probe, costs, {schedule, degree, {}}));
  if (family == "flowmoe") {
    // Sp as FlowMoE's code starts its search (ScenarioRun::build): a quarter
    // of the largest per-block tensor, at least 128 KiB. Not tuned here.
    const auto [lo, hi] = chunk_search_space(probe);
    return time_of(sched::build_flowmoe(probe, costs, flowmoe_knobs(probe, schedule, degree, std::max(lo, hi / 4))));
  }
  MOEPLAN_CHECK(family == "fsmoe", "a probed family is foldmoe, fsmoe or flowmoe");
  if (fsmoe != nullptr) return time_of(sched::build_fsmoe(probe, costs, *fsmoe));
  MOEPLAN_CHECK(schedule == "none", "an FSMoE schedule is probed at its planner's knobs");
  sched::FsMoeKnobs none;  // no degrees, no partition: no planner to run
  none.schedule = "none";
  return time_of(sched::build_fsmoe(probe, costs, none));
}

}  // namespace

double ProbedSchedule::forward_saved_ms(std::int64_t layers) const {
  return linear_in_layers(none_one.forward_ms - one.forward_ms, none_two.forward_ms - two.forward_ms, layers);
}

double ProbedSchedule::backward_saved_ms(std::int64_t layers) const {
  return linear_in_layers(none_one.backward_ms - one.backward_ms, none_two.backward_ms - two.backward_ms, layers);
}

double GradientProbe::hidden_fraction(std::int64_t layers) const {
  const double total = linear_in_layers(none_exposed_one, none_exposed_two, layers);
  if (total <= 0) return 0.0;
  const double exposed = std::clamp(linear_in_layers(exposed_one, exposed_two, layers), 0.0, total);
  return 1.0 - exposed / total;
}

model::ScenarioSpec probe_scenario(const model::ScenarioSpec& s, const LayerShape& shape, std::int64_t layers,
                                   const std::string& family) {
  model::ScenarioSpec p;
  p.name = s.name + " probe";
  p.model = s.model;
  // Every layer an MoE layer, as the folding search prices them.
  p.model.num_layers = layers;
  p.model.moe_layer.assign(static_cast<std::size_t>(layers), true);
  p.cluster = s.cluster;
  p.profile = s.profile;
  p.parallel.tp = shape.tp;
  p.parallel.cp = shape.cp;
  p.parallel.ep = shape.ep;
  p.parallel.etp = shape.etp;
  p.parallel.dp = shape.dp;
  p.parallel.edp = shape.edp;
  p.parallel.sequence_parallel = true;  // Megatron requires it with MoE and TP, as the folding search assumes
  p.parallel.order = s.parallel.order;
  p.workload.seq_len = s.workload.seq_len;
  p.workload.micro_batch_size = shape.micro_batch;
  p.workload.global_batch_size = shape.micro_batch * shape.dp;  // one micro-batch per DP rank
  p.schedule.family = family;
  p.schedule.recompute = s.schedule.recompute;
  p.limits = s.limits;
  return p;
}

std::vector<std::int64_t> probe_degrees(const std::string& family, const model::ScenarioSpec& probe) {
  if (family == "flowmoe") return flowmoe_degrees();
  if (family == "fsmoe") return {0};
  // FoldMoE's own search space (foldmoe.md section 5: {2, 4, 8, 16}; `plan`
  // of a FoldMoE scenario tries 1..32). A degree needs a token of each
  // sequence per rank.
  const std::int64_t tokens = probe.workload.seq_len / probe.parallel.tp;
  std::vector<std::int64_t> out;
  for (std::int64_t d = 2; d <= 16 && d <= tokens; d *= 2) out.push_back(d);
  return out;
}

namespace {

// One family's probes of a shape without gradient traffic: its none on 1
// and 2 layers (and FSMoE's planner on each) once, then any schedule.
class FamilyProbes {
 public:
  FamilyProbes(const model::ScenarioSpec& s, const cost::CostModel& costs, const LayerShape& in,
               const std::string& family)
      : costs_(costs), family_(family) {
    LayerShape shape = in;
    shape.dp = shape.edp = 1;  // no gradient traffic
    one_ = probe_scenario(s, shape, 1, family);
    two_ = probe_scenario(s, shape, 2, family);
    none_one_ = run_probe(one_, costs, family, "none", 1, nullptr);
    none_two_ = run_probe(two_, costs, family, "none", 1, nullptr);
    if (family == "fsmoe") {  // FSMoE's planner once per probe: its knobs serve every schedule
      fs_one_ = fsmoe_probe_plan(one_, costs);
      fs_two_ = fsmoe_probe_plan(two_, costs);
    }
  }

  const model::ScenarioSpec& one() const { return one_; }

  // Input Error when the builder refuses the degree for this shape.
  ProbedSchedule probe(const std::string& name, std::int64_t degree) const {
    ProbedSchedule p;
    p.schedule = {family_, name, degree};
    p.none_one = none_one_;
    p.none_two = none_two_;
    if (family_ == "fsmoe") {
      const sched::FsMoeKnobs k1 = fsmoe_knobs(*fs_one_, name), k2 = fsmoe_knobs(*fs_two_, name);
      p.one = run_probe(one_, costs_, family_, name, degree, &k1);
      p.two = run_probe(two_, costs_, family_, name, degree, &k2);
      p.degree_forward = k2.degree_forward;
      p.degree_backward = k2.degree_backward;
    } else {
      p.one = run_probe(one_, costs_, family_, name, degree, nullptr);
      p.two = run_probe(two_, costs_, family_, name, degree, nullptr);
      p.degree_forward = p.degree_backward = degree;
    }
    return p;
  }

 private:
  const cost::CostModel& costs_;
  std::string family_;
  model::ScenarioSpec one_, two_;
  ProbeTime none_one_, none_two_;
  std::optional<FsMoePlan> fs_one_, fs_two_;
};

}  // namespace

std::vector<ProbedSchedule> probe_layer_shape(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                              const LayerShape& shape, const std::vector<std::string>& families) {
  std::vector<ProbedSchedule> out;
  for (const std::string& family : families) {
    const FamilyProbes probes(s, costs, shape, family);
    for (const std::string& name : model::family_schedules(family)) {
      if (name == "none") continue;
      for (std::int64_t degree : probe_degrees(family, probes.one())) {
        try {
          out.push_back(probes.probe(name, degree));
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::Input) throw;  // a degree this shape cannot take (the builder says why)
        }
      }
    }
  }
  return out;
}

ProbedSchedule probe_schedule(const model::ScenarioSpec& s, const cost::CostModel& costs, const LayerShape& shape,
                              const OverlapSchedule& schedule) {
  return FamilyProbes(s, costs, shape, schedule.family).probe(schedule.schedule, schedule.degree);
}

std::vector<GradientProbe> probe_gradients(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                           const LayerShape& shape, const std::vector<const ProbedSchedule*>& probed) {
  std::vector<GradientProbe> out;
  if (probed.empty()) return out;
  const std::string& family = probed.front()->schedule.family;
  const model::ScenarioSpec one = probe_scenario(s, shape, 1, family);
  const model::ScenarioSpec two = probe_scenario(s, shape, 2, family);
  // The family's none, and FSMoE's planner (its gradient partition is for
  // these groups), once for every schedule.
  const double none_one = run_probe(one, costs, family, "none", 1, nullptr).iteration_ms;
  const double none_two = run_probe(two, costs, family, "none", 1, nullptr).iteration_ms;
  std::optional<FsMoePlan> fs_one, fs_two;
  if (family == "fsmoe") {
    fs_one = fsmoe_probe_plan(one, costs);
    fs_two = fsmoe_probe_plan(two, costs);
  }
  for (const ProbedSchedule* p : probed) {
    MOEPLAN_CHECK(p->schedule.family == family, "gradient probes of one family at a time");
    const std::string& name = p->schedule.schedule;
    const std::int64_t degree = p->schedule.degree;
    GradientProbe g;
    g.none_exposed_one = none_one - p->none_one.iteration_ms;
    g.none_exposed_two = none_two - p->none_two.iteration_ms;
    if (family == "fsmoe") {
      const sched::FsMoeKnobs k1 = fsmoe_knobs(*fs_one, name), k2 = fsmoe_knobs(*fs_two, name);
      g.exposed_one = run_probe(one, costs, family, name, degree, &k1).iteration_ms - p->one.iteration_ms;
      g.exposed_two = run_probe(two, costs, family, name, degree, &k2).iteration_ms - p->two.iteration_ms;
    } else {
      g.exposed_one = run_probe(one, costs, family, name, degree, nullptr).iteration_ms - p->one.iteration_ms;
      g.exposed_two = run_probe(two, costs, family, name, degree, nullptr).iteration_ms - p->two.iteration_ms;
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace moeplan::plan
