#include <moeplan/plan/joint.hpp>

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/plan/family_registry.hpp>
#include <moeplan/plan/mapping_search.hpp>

namespace moeplan::plan {
namespace {

auto config_key(const cost::MappingConfig& c) { return std::tie(c.tp, c.cp, c.pp, c.ep, c.etp, c.vpp, c.micro_batch); }

LayerShape shape_of(const cost::MappingConfig& c, bool gradients) {
  LayerShape s{c.tp, c.cp, c.ep, c.etp, c.micro_batch, 1, 1};
  if (gradients) {
    s.dp = c.dp;
    s.edp = c.edp;
  }
  return s;
}

// A mapping priced once and run with no overlap: what every schedule on it starts from.
struct Mapping {
  std::shared_ptr<const cost::LayerPrices> layers;
  MappingResult result;
};

JointResult no_overlap(const Mapping& m) {
  JointResult r;
  r.priced = m.result;
  r.layers = m.layers;
  r.no_overlap_ms = m.result.iteration_ms;
  return r;
}

// `m` (priced with no overlap) with what `p` hides of its chunks and `g` of its gradients.
JointResult overlapped(const model::ScenarioSpec& s, const cost::CostModel& costs, const Mapping& m,
                       const ProbedSchedule& p, const GradientProbe& g) {
  const MappingResult& f = m.result;
  JointResult r;
  r.layers = m.layers;
  r.overlap = p.schedule;
  r.degree_forward = p.degree_forward;
  r.degree_backward = p.degree_backward;
  r.no_overlap_ms = f.iteration_ms;
  r.gradient_hidden_fraction = g.hidden_fraction(f.stage.layers_per_stage);
  r.saved = stage_overlap(f, p, r.gradient_hidden_fraction);
  r.priced = run_pipeline(*m.layers, costs, s.limits, &r.saved);
  return r;
}

// Of each schedule's probed degrees, the one that takes the most off a chunk
// of `layers` layers (ties: the smaller degree, probed first).
std::vector<const ProbedSchedule*> best_degrees(const std::vector<ProbedSchedule>& probes, std::int64_t layers) {
  std::vector<const ProbedSchedule*> out;
  for (const ProbedSchedule& p : probes) {
    const double saved = p.forward_saved_ms(layers) + p.backward_saved_ms(layers);
    if (!out.empty() && out.back()->schedule.family == p.schedule.family &&
        out.back()->schedule.schedule == p.schedule.schedule) {
      const ProbedSchedule& kept = *out.back();
      if (saved > kept.forward_saved_ms(layers) + kept.backward_saved_ms(layers)) out.back() = &p;
      continue;
    }
    out.push_back(&p);
  }
  return out;
}

using GradientKey = std::pair<LayerShape, OverlapSchedule>;

// What a search's probes depend on besides their shape (ProbeCache::context):
// probe_scenario's parts of the scenario, the profile, the families tried.
std::string probe_context(const model::ScenarioSpec& s, const std::vector<std::string>& families) {
  std::string out = fmt::format("model {} cluster {} x {} profile {} seq {} recompute {} max memory {} families",
                                s.model.name, s.cluster.name, s.cluster.gpus_per_node,
                                s.profile ? s.profile->name : std::string("-"), s.workload.seq_len,
                                model::recompute_text(s.schedule.recompute), s.limits.max_memory_bytes);
  for (const std::string& f : families) out += " " + f;
  return out;
}

// A schedule of one mapping between its bounds: the mapping priced with none
// of the schedule's gradient traffic hidden (upper) and with all of it (lower).
struct Bracket {
  const ProbedSchedule* probed = nullptr;
  double lower_ms = 0, upper_ms = 0;
  bool probe = false;  // its gradient probe decides
};

class JointSearcher {
 public:
  JointSearcher(const model::ScenarioSpec& s, const cost::CostModel& costs, const JointOptions& o)
      : s_(s), costs_(costs), o_(o), families_(o.families), probes_(o.probes != nullptr ? *o.probes : own_probes_) {
    if (families_.empty())
      for (const Family* f : overlap_families()) families_.push_back(f->name());
    const std::string context = probe_context(s, families_);
    if (probes_.context.empty()) probes_.context = context;
    MOEPLAN_CHECK(probes_.context == context, "a probe cache serves searches of one model, cluster kind and profile");
  }

  // Each mapping's best schedule. A schedule whose gradient probe is needed
  // only if it could win: its lower bound must beat both the mapping's best
  // upper bound and `threshold` (a mapping above it cannot enter the ranking's
  // exact top; its reported best is then at most too slow, never too fast).
  std::vector<JointResult> evaluate(const std::vector<const Mapping*>& mappings, double threshold,
                                    JointSearch& out) {
    probe_shapes(mappings, out.threads);
    std::vector<std::vector<Bracket>> brackets(mappings.size());
    out.threads.record(o_.threads, mappings.size(), parallel_for(mappings.size(), o_.threads, [&](std::size_t i) {
      brackets[i] = bracket(*mappings[i], threshold);
    }));
    probe_gradients_needed(mappings, brackets, out.threads);
    std::vector<JointResult> best(mappings.size());
    out.threads.record(o_.threads, mappings.size(), parallel_for(mappings.size(), o_.threads, [&](std::size_t i) {
      best[i] = best_schedule(*mappings[i], brackets[i]);
      if (o_.progress != nullptr) o_.progress->advance();
    }));
    for (const std::vector<Bracket>& b : brackets)
      out.configurations += static_cast<std::size_t>(std::count_if(b.begin(), b.end(), [](const Bracket& x) { return x.probe; }));
    out.configurations += configurations_.exchange(0);
    return best;
  }

  std::size_t shapes_probed() const { return shapes_used_.size(); }
  std::size_t gradient_probes() const { return gradients_used_.size(); }

 private:
  void probe_shapes(const std::vector<const Mapping*>& mappings, ThreadsStarted& threads) {
    std::vector<LayerShape> missing;
    for (const Mapping* m : mappings) {
      const LayerShape key = shape_of(m->result.config, false);
      shapes_used_.insert(key);
      if (!probes_.shapes.count(key) && std::find(missing.begin(), missing.end(), key) == missing.end())
        missing.push_back(key);
    }
    std::vector<std::vector<ProbedSchedule>> probed(missing.size());
    threads.record(o_.threads, missing.size(), parallel_for(missing.size(), o_.threads, [&](std::size_t i) {
      probed[i] = probe_layer_shape(s_, costs_, missing[i], families_);
    }));
    for (std::size_t i = 0; i < missing.size(); ++i) probes_.shapes.emplace(missing[i], std::move(probed[i]));
  }

  // The schedules of a mapping that could be its best, bracketed. A schedule
  // is priced only if its bound (joint_lower_bound_ms with its own chunk
  // savings) can beat `threshold` and the best upper price so far.
  std::vector<Bracket> bracket(const Mapping& m, double threshold) const {
    const MappingResult& f = m.result;
    // The overlap families price BF16 GEMMs: a mapping the search priced
    // under an FP8 recipe (schedule.search) keeps Megatron's schedule only.
    if (m.layers->precision != model::Precision::Bf16) return {};
    const std::vector<const ProbedSchedule*> schedules =
        best_degrees(probes_.shapes.at(shape_of(f.config, false)), f.stage.layers_per_chunk);
    std::vector<double> bound(schedules.size());
    std::vector<std::size_t> order(schedules.size());
    for (std::size_t i = 0; i < schedules.size(); ++i) {
      order[i] = i;
      bound[i] = schedule_lower_bound_ms(f, stage_overlap(f, *schedules[i], 1.0));
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bound[a] < bound[b]; });
    // Schedules that hide the same (no gradient probe yet) price alike: each price once.
    std::vector<std::pair<StageOverlap, double>> priced;
    auto price = [&](const StageOverlap& o) {
      for (const auto& [seen, ms] : priced)
        if (seen.chunk_forward_saved_ms == o.chunk_forward_saved_ms &&
            seen.chunk_backward_saved_ms == o.chunk_backward_saved_ms && seen.optimizer_saved_ms == o.optimizer_saved_ms)
          return ms;
      priced.emplace_back(o, run_pipeline(*m.layers, costs_, s_.limits, &o).iteration_ms);
      return priced.back().second;
    };
    std::vector<Bracket> out;
    double best_upper = f.iteration_ms;  // no overlap is exact
    for (std::size_t i : order) {
      if (bound[i] > std::min(threshold, best_upper)) break;  // this one and every later one cannot win
      Bracket b;
      b.probed = schedules[i];
      const StageOverlap none = stage_overlap(f, *b.probed, 0.0), all = stage_overlap(f, *b.probed, 1.0);
      b.upper_ms = price(none);
      b.lower_ms = all.optimizer_saved_ms > 0 ? price(all) : b.upper_ms;
      best_upper = std::min(best_upper, b.upper_ms);
      out.push_back(b);
    }
    for (Bracket& b : out) b.probe = b.lower_ms < b.upper_ms && b.lower_ms <= best_upper && b.lower_ms <= threshold;
    configurations_ += priced.size();
    return out;
  }

  void probe_gradients_needed(const std::vector<const Mapping*>& mappings,
                              const std::vector<std::vector<Bracket>>& brackets, ThreadsStarted& threads) {
    // Grouped by (shape with its gradient groups, family): a group shares its none and FSMoE's planner.
    std::vector<std::pair<LayerShape, std::vector<const ProbedSchedule*>>> groups;
    for (std::size_t i = 0; i < mappings.size(); ++i)
      for (const Bracket& b : brackets[i]) {
        if (!b.probe) continue;
        const LayerShape shape = shape_of(mappings[i]->result.config, true);
        gradients_used_.insert({shape, b.probed->schedule});
        if (probes_.gradients.count({shape, b.probed->schedule})) continue;
        auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
          return g.first == shape && g.second.front()->schedule.family == b.probed->schedule.family;
        });
        if (group == groups.end()) {
          groups.push_back({shape, {b.probed}});
        } else if (std::none_of(group->second.begin(), group->second.end(),
                                [&](const ProbedSchedule* p) { return p->schedule == b.probed->schedule; })) {
          group->second.push_back(b.probed);
        }
      }
    std::vector<std::vector<GradientProbe>> probed(groups.size());
    threads.record(o_.threads, groups.size(), parallel_for(groups.size(), o_.threads, [&](std::size_t i) {
      probed[i] = probe_gradients(s_, costs_, groups[i].first, groups[i].second);
    }));
    for (std::size_t i = 0; i < groups.size(); ++i)
      for (std::size_t j = 0; j < groups[i].second.size(); ++j)
        probes_.gradients.emplace(GradientKey{groups[i].first, groups[i].second[j]->schedule}, probed[i][j]);
  }

  // The mapping at no overlap and at each schedule whose gradient probe
  // decided it (the others cannot win): the fastest, no overlap first on ties.
  JointResult best_schedule(const Mapping& m, const std::vector<Bracket>& brackets) const {
    const MappingResult& f = m.result;
    JointResult best = no_overlap(m);
    for (const Bracket& b : brackets) {
      JointResult r;
      if (b.probe) {
        r = overlapped(s_, costs_, m, *b.probed, probes_.gradients.at({shape_of(f.config, true), b.probed->schedule}));
      } else if (b.lower_ms == b.upper_ms) {  // no gradient traffic to hide: the bound is the price
        r = overlapped(s_, costs_, m, *b.probed, GradientProbe{});
      } else {
        continue;
      }
      if (r.priced.iteration_ms < best.priced.iteration_ms) best = std::move(r);
    }
    return best;
  }

  const model::ScenarioSpec& s_;
  const cost::CostModel& costs_;
  const JointOptions& o_;
  std::vector<std::string> families_;
  ProbeCache own_probes_;  // when the search keeps its probes to itself
  ProbeCache& probes_;
  std::set<LayerShape> shapes_used_;      // by this search (its counts), probed now or before
  std::set<GradientKey> gradients_used_;
  mutable std::atomic<std::size_t> configurations_{0};  // priced by bracket(), from every thread
};

bool ranks_before(const JointResult& a, const JointResult& b) {
  if (a.priced.iteration_ms != b.priced.iteration_ms) return a.priced.iteration_ms < b.priced.iteration_ms;
  return config_key(a.priced.config) < config_key(b.priced.config);
}

}  // namespace

std::string JointResult::label() const {
  return overlap.none() ? std::string(OverlapSchedule::kNone) : overlap.family + "/" + overlap.schedule;
}

double JointResult::hidden_ms() const {
  const double chunks = static_cast<double>(priced.stage.micro_batches * priced.config.vpp);
  return chunks * (saved.chunk_forward_saved_ms + saved.chunk_backward_saved_ms) + saved.optimizer_saved_ms;
}

StageOverlap stage_overlap(const MappingResult& f, const ProbedSchedule& p, double gradient_hidden_fraction) {
  const MappingStage& st = f.stage;
  const std::int64_t n = st.layers_per_chunk;
  const double layers = static_cast<double>(n);
  StageOverlap out;
  // At most the chunk's communication is hidden; a schedule slower than its
  // family's none lengthens the chunk by as much.
  out.chunk_forward_saved_ms = std::min(p.forward_saved_ms(n), layers * st.layer_forward_comm_ms);
  out.chunk_backward_saved_ms = std::min(p.backward_saved_ms(n), layers * st.layer_backward_comm_ms);
  out.optimizer_saved_ms = std::clamp(gradient_hidden_fraction, 0.0, 1.0) * st.layer_gradient_rs_ms;
  return out;
}

JointResult price_joint(const model::ScenarioSpec& s, const cost::CostModel& costs, const cost::MappingConfig& mapping,
                        const OverlapSchedule& schedule) {
  Mapping m;
  m.layers = std::make_shared<const cost::LayerPrices>(cost::price_layers(s, costs, mapping));
  m.result = run_pipeline(*m.layers, costs, s.limits);
  if (schedule.none()) return no_overlap(m);
  const ProbedSchedule p = probe_schedule(s, costs, shape_of(m.result.config, false), schedule);
  return overlapped(s, costs, m, p, probe_gradients(s, costs, shape_of(m.result.config, true), {&p}).front());
}

double schedule_lower_bound_ms(const MappingResult& f, const StageOverlap& o) {
  const MappingStage& st = f.stage;
  auto kept = [](double chunk_ms, double saved_ms) {
    return chunk_ms > 0 ? std::clamp(1.0 - saved_ms / chunk_ms, 0.0, 1.0) : 1.0;
  };
  // Longer chunks do not lengthen the stage-to-stage transfers: no bound above 1.
  const double r =
      std::min(kept(st.chunk_forward_ms, o.chunk_forward_saved_ms), kept(st.chunk_backward_ms, o.chunk_backward_saved_ms));
  return r * st.pipeline_ms + (st.optimizer_ms - o.optimizer_saved_ms);
}

double joint_lower_bound_ms(const MappingResult& f) {
  const MappingStage& st = f.stage;
  const double layers = static_cast<double>(st.layers_per_chunk);
  StageOverlap all;  // every chunk's communication and the layers' gradient reduce-scatter hidden
  all.chunk_forward_saved_ms = layers * st.layer_forward_comm_ms;
  all.chunk_backward_saved_ms = layers * st.layer_backward_comm_ms;
  all.optimizer_saved_ms = st.layer_gradient_rs_ms;
  return schedule_lower_bound_ms(f, all);
}

JointSearch search_joint(const model::ScenarioSpec& s, const cost::CostModel& costs, const JointOptions& o,
                         const std::optional<cost::MappingConfig>& default_mapping) {
  JointSearch out;
  // The joint search prices its own overlap of the gradient reduce-scatter
  // (StageOverlap::optimizer_saved_ms): Megatron's flags on top would hide it twice.
  for (const auto& [set, field] : {std::pair{s.schedule.overlap_grad_reduce, "schedule.overlap_grad_reduce"},
                                   {s.schedule.overlap_param_gather, "schedule.overlap_param_gather"},
                                   {s.schedule.a2a_overlap, "schedule.a2a_overlap"}})
    if (set)
      throw_input_error(field, "the joint search prices its own overlap of the optimizer step with the overlap "
                               "schedules; leave it false there");
  // Its overlap schedules hide the layers' gradient reduce-scatter in the
  // step, which Megatron-FSDP moves into each block's backward pass.
  if (model::fully_sharded(s.schedule))
    throw_input_error("schedule.data_parallel_sharding_strategy",
                      "the joint search's overlap schedules hide the distributed optimizer's step, which "
                      "optim_grads_params moves into each block; leave it optim there");
  // Every mapping priced once: its layers serve every schedule's run on it.
  std::vector<Mapping> all;
  for (PricedMapping& p : price_mappings(s, costs, o.mode, o.threads, &out.threads))
    all.push_back({std::make_shared<const cost::LayerPrices>(std::move(p.layers)), std::move(p.result)});
  out.mappings = all.size();
  for (const Mapping& m : all) {
    const MappingResult& f = m.result;
    if (!out.fastest || f.iteration_ms < out.fastest->iteration_ms) out.fastest = f;
    if (out.least_memory_bytes == 0 || f.memory_bytes_per_gpu < out.least_memory_bytes)
      out.least_memory_bytes = f.memory_bytes_per_gpu;
    if (f.fits) ++out.fitting;
  }
  if (out.fitting == 0) {
    if (!o.require_fit) return out;
    throw Error(ErrorKind::Runtime,
                fmt::format("no {} mapping of {} on {} GPUs fits in GPU memory", o.mode, s.name, s.cluster.world_size()));
  }
  out.best_no_overlap = no_overlap(all.front());  // price_mappings ranks those that fit first
  // Fitting mappings by their bound, then by their place in the mapping search's ranking.
  std::vector<std::size_t> order;
  std::vector<double> bound(all.size());
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].result.fits) {
      order.push_back(i);
      bound[i] = joint_lower_bound_ms(all[i].result);
    }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bound[a] < bound[b]; });
  if (o.progress != nullptr) o.progress->add_total(order.size() + (default_mapping ? 1 : 0));
  JointSearcher searcher(s, costs, o);
  const std::size_t batch = std::max<std::size_t>(o.batch, 1);
  std::size_t next = 0;
  while (next < order.size()) {
    // The exact_top-th best so far: a mapping whose bound exceeds it cannot enter the best exact_top.
    if (out.ranked.size() >= o.exact_top && bound[order[next]] > out.ranked[o.exact_top - 1].priced.iteration_ms)
      break;
    std::vector<const Mapping*> mappings;
    for (; next < order.size() && mappings.size() < batch; ++next) mappings.push_back(&all[order[next]]);
    const double threshold = out.ranked.size() >= o.exact_top ? out.ranked[o.exact_top - 1].priced.iteration_ms
                                                              : std::numeric_limits<double>::infinity();
    for (JointResult& r : searcher.evaluate(mappings, threshold, out)) out.ranked.push_back(std::move(r));
    std::stable_sort(out.ranked.begin(), out.ranked.end(), ranks_before);
  }
  out.evaluated = next;
  if (o.progress != nullptr) o.progress->advance(order.size() - next);
  if (default_mapping) {
    // The scenario's own mapping, priced again only when the search did not price it.
    const auto searched = std::find_if(all.begin(), all.end(), [&](const Mapping& m) {
      return cost::same_mapping(m.result.config, *default_mapping);
    });
    Mapping own;
    if (searched != all.end()) {
      own = *searched;
    } else {
      own.layers = std::make_shared<const cost::LayerPrices>(cost::price_layers(s, costs, *default_mapping));
      own.result = run_pipeline(*own.layers, costs, s.limits);
    }
    out.default_mapping = searcher.evaluate({&own}, std::numeric_limits<double>::infinity(), out).front();
  }
  out.shapes_probed = searcher.shapes_probed();
  out.gradient_probes = searcher.gradient_probes();
  return out;
}

std::string overlap_degree_text(const OverlapSchedule& overlap, std::int64_t degree_forward,
                                std::int64_t degree_backward) {
  if (overlap.none()) return "";
  const OverlapProbing& probing = *family_named(overlap.family).overlap();
  if (probing.per_phase_degrees()) return fmt::format("{}{}/{}", probing.degree_symbol(), degree_forward, degree_backward);
  return fmt::format("{}{}", probing.degree_symbol(), degree_forward);
}

}  // namespace moeplan::plan
