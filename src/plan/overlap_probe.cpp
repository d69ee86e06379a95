#include <moeplan/plan/overlap_probe.hpp>

#include <algorithm>
#include <optional>

#include <memory>
#include <tuple>

#include <moeplan/core/error.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/family_registry.hpp>

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

// The family's probes.
const OverlapProbing& probing(const std::string& family) {
  const OverlapProbing* p = family_named(family).overlap();
  MOEPLAN_CHECK(p != nullptr, "a probed family has overlap schedules");
  return *p;
}

// A probe built and timed; `schedule` "none" (with no setup) for the family's none.
ProbeTime run_probe(const model::ScenarioSpec& probe, const cost::CostModel& costs, const OverlapProbing& family,
                    const std::string& schedule, std::int64_t degree, const ProbeSetup* setup) {
  return time_of(family.build_probe(probe, costs, schedule, degree, setup));
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
  // Only the nodes the probe's ranks fill: a probe is then the same whatever
  // the cluster's size (the capacity table's rows share their probes: ProbeCache).
  const std::int64_t ranks = std::max(shape.tp * shape.cp * shape.dp, shape.ep * shape.etp * shape.edp);
  p.cluster.num_nodes = (ranks + s.cluster.gpus_per_node - 1) / s.cluster.gpus_per_node;
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
  p.schedule.attention_backend = s.schedule.attention_backend;
  p.limits = s.limits;
  return p;
}

std::vector<std::int64_t> probe_degrees(const std::string& family, const model::ScenarioSpec& probe) {
  return probing(family).probe_degrees(probe);
}

namespace {

// One family's probes of a shape without gradient traffic: its none on 1
// and 2 layers (and its probe setup on each: FSMoE's planner) once, then any schedule.
class FamilyProbes {
 public:
  FamilyProbes(const model::ScenarioSpec& s, const cost::CostModel& costs, const LayerShape& in,
               const std::string& family)
      : costs_(costs), family_(family), probing_(probing(family)) {
    LayerShape shape = in;
    shape.dp = shape.edp = 1;  // no gradient traffic
    one_ = probe_scenario(s, shape, 1, family);
    two_ = probe_scenario(s, shape, 2, family);
    none_one_ = run_probe(one_, costs, probing_, "none", 1, nullptr);
    none_two_ = run_probe(two_, costs, probing_, "none", 1, nullptr);
    setup_one_ = probing_.prepare_probe(one_, costs);
    setup_two_ = probing_.prepare_probe(two_, costs);
  }

  const model::ScenarioSpec& one() const { return one_; }

  // Input Error when the builder refuses the degree for this shape.
  ProbedSchedule probe(const std::string& name, std::int64_t degree) const {
    ProbedSchedule p;
    p.schedule = {family_, name, degree};
    p.none_one = none_one_;
    p.none_two = none_two_;
    p.one = run_probe(one_, costs_, probing_, name, degree, setup_one_.get());
    p.two = run_probe(two_, costs_, probing_, name, degree, setup_two_.get());
    std::tie(p.degree_forward, p.degree_backward) = probing_.built_degrees(setup_two_.get(), name, degree);
    return p;
  }

 private:
  const cost::CostModel& costs_;
  std::string family_;
  const OverlapProbing& probing_;
  model::ScenarioSpec one_, two_;
  ProbeTime none_one_, none_two_;
  std::unique_ptr<ProbeSetup> setup_one_, setup_two_;
};

}  // namespace

std::vector<ProbedSchedule> probe_layer_shape(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                              const LayerShape& shape, const std::vector<std::string>& families) {
  std::vector<ProbedSchedule> out;
  for (const std::string& family : families) {
    const FamilyProbes probes(s, costs, shape, family);
    for (const std::string& name : family_named(family).rules().schedules()) {
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
  // The family's none, and its probe setup (FSMoE's planner: its gradient
  // partition is for these groups), once for every schedule.
  const OverlapProbing& family_probing = probing(family);
  const double none_one = run_probe(one, costs, family_probing, "none", 1, nullptr).iteration_ms;
  const double none_two = run_probe(two, costs, family_probing, "none", 1, nullptr).iteration_ms;
  const std::unique_ptr<ProbeSetup> setup_one = family_probing.prepare_probe(one, costs);
  const std::unique_ptr<ProbeSetup> setup_two = family_probing.prepare_probe(two, costs);
  for (const ProbedSchedule* p : probed) {
    MOEPLAN_CHECK(p->schedule.family == family, "gradient probes of one family at a time");
    const std::string& name = p->schedule.schedule;
    const std::int64_t degree = p->schedule.degree;
    GradientProbe g;
    g.none_exposed_one = none_one - p->none_one.iteration_ms;
    g.none_exposed_two = none_two - p->none_two.iteration_ms;
    g.exposed_one =
        run_probe(one, costs, family_probing, name, degree, setup_one.get()).iteration_ms - p->one.iteration_ms;
    g.exposed_two =
        run_probe(two, costs, family_probing, name, degree, setup_two.get()).iteration_ms - p->two.iteration_ms;
    out.push_back(g);
  }
  return out;
}

}  // namespace moeplan::plan
