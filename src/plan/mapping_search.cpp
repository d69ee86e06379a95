#include <moeplan/plan/mapping_search.hpp>

#include <algorithm>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/units.hpp>
#include <moeplan/model/recompute.hpp>
#include <moeplan/model/pipeline_layout.hpp>
#include <moeplan/plan/open_knobs.hpp>

namespace moeplan::plan {

std::vector<cost::MappingConfig> enumerate_mappings(const model::ScenarioSpec& s, const std::string& mode) {
  if (mode != "coupled" && mode != "folded")
    throw Error(ErrorKind::Input, fmt::format("unknown search mode '{}' (coupled, folded)", mode));
  const model::ModelSpec& m = s.model;
  const std::int64_t world = s.cluster.world_size();
  // TP and ETP stay inside one NVLink domain (the node, or a GB200 NVL72 rack).
  const std::int64_t gpn = s.cluster.link_domain();
  std::vector<cost::MappingConfig> configs;
  auto divides = [](std::int64_t a, std::int64_t b) { return b % a == 0; };
  for (std::int64_t tp = 1; tp <= gpn; tp *= 2)
    for (std::int64_t cp = 1; cp <= 16; cp *= 2)
      for (std::int64_t pp = 1; pp <= 32; pp *= 2) {
        if (!divides(tp * cp * pp, world)) continue;
        const std::int64_t dp = world / (tp * cp * pp);
        for (std::int64_t vpp = 1; vpp <= 4; vpp *= 2) {
          if (vpp > 1 && pp == 1) continue;
          // The layers split evenly, or by the scenario's layout where it has
          // as many stages, or else by Megatron's uneven split (lighter end
          // stages, model::uneven_pipeline_layout); a split leaving a stage
          // without a block is not tried.
          const std::int64_t stages = pp * vpp;
          std::vector<std::int64_t> layout;
          if (static_cast<std::int64_t>(s.parallel.stage_layers.size()) == stages)
            layout = s.parallel.stage_layers;
          else if (!divides(stages, m.num_layers) && (layout = model::uneven_pipeline_layout(m.num_layers, stages)).empty())
            continue;
          // A dense model has no experts: ep = 1 and the expert mapping is the attention one (etp = tp).
          for (std::int64_t ep = 1; ep <= std::max<std::int64_t>(1, m.moe.num_experts); ep *= 2) {
            if (!divides(ep, m.moe.num_experts)) continue;
            for (std::int64_t etp = 1; etp <= gpn; etp *= 2) {
              if (!divides(etp * ep * pp, world) || (m.is_dense() && etp != tp)) continue;
              if (mode == "coupled" && (etp != tp || !divides(ep, dp * cp))) continue;
              for (std::int64_t mb : {1, 2, 4}) configs.push_back({tp, cp, pp, vpp, ep, etp, mb, 0, 0, layout});
            }
          }
        }
      }
  return configs;
}

std::vector<PricedMapping> price_mappings(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                          const std::string& mode, unsigned threads, ThreadsStarted* started,
                                          Progress* progress) {
  const std::vector<cost::MappingConfig> configs = enumerate_mappings(s, mode);
  // Each mapping with each precision the scenario leaves open, at the first
  // recomputation that fits (plan/open_knobs.hpp); one pricing when it leaves none.
  const OpenKnobs open = open_knobs(s);
  const bool precision_open = std::count(s.schedule.search.begin(), s.schedule.search.end(), "precision") > 0;
  const bool recompute_open = std::count(s.schedule.search.begin(), s.schedule.search.end(), "recompute") > 0;
  std::vector<std::optional<PricedMapping>> priced(configs.size());
  if (progress != nullptr) progress->add_total(configs.size());
  const double usable_gib = cost::usable_memory_bytes(s.cluster.gpu) / kGiB;
  const unsigned started_now = parallel_for(configs.size(), threads, [&](std::size_t i) {
    try {
      std::vector<std::string> precision_times;
      for (const std::vector<model::ScenarioSpec>& ladder : open.by_precision) {
        std::string heavier;  // the recomputation before this one, which did not fit
        for (std::size_t rung = 0; rung < ladder.size(); ++rung) {
          cost::LayerPrices layers = cost::price_layers(ladder[rung], costs, configs[i]);
          if (!layers.fits && rung + 1 < ladder.size()) {
            heavier = fmt::format("recompute {} needs {:.1f} GiB per GPU, more than the {:.1f} GiB usable",
                                  model::recompute_text(layers.recompute), layers.memory_bytes_per_gpu / kGiB,
                                  usable_gib);
            continue;
          }
          MappingResult result = run_pipeline(layers, costs, s.limits);
          precision_times.push_back(
              fmt::format("{} {:.1f} ms{}", model::to_string(layers.precision), result.iteration_ms,
                          result.fits ? "" : " (does not fit)"));
          if (precision_open) result.chosen_precision = layers.precision;
          if (recompute_open) {
            result.chosen_recompute = layers.recompute;
            result.recompute_for_memory = rung > 0;
            result.knob_choice = heavier;
          }
          // The fastest that fits; on a tie the earlier (bf16, then less recomputation).
          const std::optional<PricedMapping>& best = priced[i];
          if (!best || (result.fits && !best->result.fits) ||
              (result.fits == best->result.fits && result.iteration_ms < best->result.iteration_ms))
            priced[i] = PricedMapping{std::move(layers), std::move(result)};
          break;
        }
      }
      if (precision_open && priced[i]) {
        std::string& why = priced[i]->result.knob_choice;
        why += fmt::format("{}precisions at this mapping: {}", why.empty() ? "" : "; ",
                           fmt::format("{}", fmt::join(precision_times, ", ")));
      }
    } catch (const Error& e) {
      // An invalid combination is skipped; one too large to simulate is not:
      // the search would silently answer from the others.
      if (e.kind() == ErrorKind::Limit) {
        const cost::MappingConfig& c = configs[i];
        throw Error(ErrorKind::Limit,
                    fmt::format("mapping tp {} cp {} pp {} vpp {} ep {} etp {} mb {}: {}", c.tp, c.cp, c.pp, c.vpp,
                                c.ep, c.etp, c.micro_batch, e.reason()));
      }
      if (e.kind() != ErrorKind::Input) throw;
    }
    if (progress != nullptr) progress->advance();
  });
  if (started != nullptr) started->record(threads, configs.size(), started_now);
  std::vector<PricedMapping> out;
  for (auto& p : priced)
    if (p) out.push_back(std::move(*p));
  std::stable_sort(out.begin(), out.end(), [](const PricedMapping& pa, const PricedMapping& pb) {
    const MappingResult &a = pa.result, &b = pb.result;
    if (a.fits != b.fits) return a.fits;
    if (a.iteration_ms != b.iteration_ms) return a.iteration_ms < b.iteration_ms;
    return std::tie(a.config.tp, a.config.cp, a.config.pp, a.config.ep, a.config.etp, a.config.vpp,
                    a.config.micro_batch) < std::tie(b.config.tp, b.config.cp, b.config.pp, b.config.ep, b.config.etp,
                                                     b.config.vpp, b.config.micro_batch);
  });
  return out;
}

Candidate mapping_candidate(const std::string& schedule, const MappingResult& f) {
  Candidate c;
  c.schedule = schedule;
  c.knobs.parallelism = f.config.parallel_spec();
  c.knobs.micro_batch_size = f.config.micro_batch;
  c.knobs.precision = f.chosen_precision;
  c.knobs.recompute = f.chosen_recompute;
  c.iteration_ms = f.iteration_ms;
  c.memory_bytes_per_gpu = f.memory_bytes_per_gpu;
  c.fits = f.fits;
  c.mfu = f.mfu;
  return c;
}

std::vector<MappingResult> search_mappings(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                           const std::string& mode, unsigned threads, ThreadsStarted* started,
                                           Progress* progress) {
  std::vector<MappingResult> out;
  for (PricedMapping& p : price_mappings(s, costs, mode, threads, started, progress)) out.push_back(std::move(p.result));
  return out;
}

}  // namespace moeplan::plan
