#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <moeplan/family/folding/family.hpp>

using namespace moeplan;

namespace {

// A mapping result with a recognisable breakdown: tp = `tp`, the rest 1.
plan::MappingResult mapping(std::int64_t tp, double iteration_ms, bool fits) {
  plan::MappingResult f;
  f.config.tp = tp;
  f.iteration_ms = iteration_ms;
  f.fits = fits;
  f.breakdown.attention_ms = 1.0 * static_cast<double>(tp);
  f.breakdown.moe_compute_ms = 2.0;
  f.breakdown.a2a_ms = 0.25;
  f.breakdown.agrs_ms = 0.5;
  f.breakdown.dp_ms = 0.125;
  f.breakdown.pp_bubble_ms = 3.0;  // idle: in neither part of a bar
  return f;
}

model::PlanKnobs knobs_of(const cost::MappingConfig& c) {
  model::PlanKnobs k;
  model::ParallelSpec p;
  p.tp = c.tp;
  p.cp = c.cp;
  p.pp = c.pp;
  p.vpp = c.vpp;
  p.ep = c.ep;
  p.etp = c.etp;
  k.parallelism = p;
  k.micro_batch_size = c.micro_batch;
  return k;
}

}  // namespace

TEST_CASE("folding::FoldingRecord::picture: the best fitting mappings as bars, the coupled best as baseline",
          "[family][folding]") {
  // Eight folded mappings (tp 1..8), the last two not fitting; the chosen one is tp 8's (it does not fit: the
  // bar shows it anyway, wherever it ranks).
  std::vector<plan::MappingResult> folded;
  for (std::int64_t tp = 1; tp <= 8; ++tp) folded.push_back(mapping(tp, 10.0 + static_cast<double>(tp), tp <= 6));
  const std::vector<plan::MappingResult> coupled{mapping(16, 40.0, true)};
  const folding::FoldingRecord record(folded, coupled);
  model::ScenarioSpec s;
  s.cluster.gpu.memory_bytes = 80e9;
  plan::PlanResult r;
  r.baselines.push_back({"coupled", 40.0});
  plan::Candidate chosen;
  chosen.knobs = knobs_of(folded[7].config);
  const plan::SearchPicture p = record.picture(s, r, chosen);
  CHECK(p.chart == "mfu-memory");
  CHECK(p.bars_by == "mapping");
  CHECK(p.stage_lanes);
  // Six fitting folded bars (kFoldingBars), tp 7 left out (it does not fit), tp 8 (chosen), the coupled best.
  REQUIRE(p.bars.size() == 8);
  for (std::size_t i = 0; i < 6; ++i) {
    const double tp = static_cast<double>(i + 1);
    INFO("bar " << i);
    CHECK(p.bars[i].name == fmt::format("folded tp{} cp1 pp1 vpp1 ep1 etp1 mb1", i + 1));
    CHECK(p.bars[i].iteration_ms == 10.0 + tp);
    CHECK(p.bars[i].compute_ms == tp + 2.0);              // attention + MoE compute
    CHECK(p.bars[i].exposed_comm_ms == 0.25 + 0.5 + 0.125);  // A2A + AG/RS + optimizer: 0.875
    CHECK(p.bars[i].role.empty());
  }
  CHECK(p.bars[6].name == "folded tp8 cp1 pp1 vpp1 ep1 etp1 mb1");
  CHECK(p.bars[6].role == "chosen");
  CHECK(p.bars[6].compute_ms == 10.0);  // 8 + 2
  CHECK(p.bars[7].name == "coupled tp16 cp1 pp1 vpp1 ep1 etp1 mb1");
  CHECK(p.bars[7].role == "baseline");
  CHECK(p.bars[7].iteration_ms == 40.0);
  // The memory axis: 80 GB less the CUDA context (287,047,680 B), over the
  // allocator's 4%: 79,712,952,320 / 1.04 = 76,647,069,538.46 B.
  REQUIRE(p.memory_limit_bytes);
  CHECK(*p.memory_limit_bytes == Approx(76647069538.46).epsilon(1e-12));
  SECTION("without a coupled mapping that fits, no baseline bar") {
    r.baselines.clear();
    CHECK(record.picture(s, r, chosen).bars.size() == 7);
  }
}

TEST_CASE("folding::FoldingRecord::binding_constraint: a chosen mapping that fits by less than the memory model's "
          "error is said",
          "[family][folding]") {
  // 80 GB: 76,647,069,538 B usable (record_test's picture case). The fastest
  // mapping is chosen and fits; at 70e9 B, 70e9 / 0.934 = 74.9e9 is still
  // under the line (a peak under-predicted by the model's 6.6% would fit):
  // nothing said; at 74e9 B, 74e9 / 0.934 = 79.2e9 is
  // over the line: "may not fit", naming both sizes in GiB (74e9 B = 68.9 GiB,
  // the line 71.4 GiB).
  const auto binding = [](double bytes) {
    plan::MappingResult f = mapping(1, 10.0, true);
    f.memory_bytes_per_gpu = bytes;
    const folding::FoldingRecord record({f}, {});
    model::ScenarioSpec s;
    s.cluster.gpu.memory_bytes = 80e9;
    return record.binding_constraint(s, plan::PlanResult{});
  };
  const plan::BindingConstraint roomy = binding(70e9);
  CHECK(roomy.name == "none");
  CHECK(roomy.detail == "the fastest mapping searched fits in memory");
  const plan::BindingConstraint tight = binding(74e9);
  CHECK(tight.name == "none");
  CHECK(tight.detail == "the fastest mapping searched fits in memory; its 68.9 GiB per GPU is within 6.6% of the "
                        "71.4 GiB usable, the memory model's largest under-prediction of a measured peak: it may "
                        "not fit");
}
