// The published-runs summary (docs/validation.md): median and signed errors,
// and the pairs of comparable rows ranked in the measured order, by hand.

#include <catch2/catch.hpp>

#include <moeplan/perf/published_bench.hpp>

namespace {

moeplan::io::PublishedRun run(std::int64_t tp, std::int64_t gbs) {
  moeplan::io::PublishedRun r;
  r.model = "m";
  r.cluster_ref = "c";
  r.gpus = 8;
  r.seq = 4096;
  r.global_batch = gbs;
  r.tp = tp;
  r.dp = 8 / tp;
  r.micro_batch = 1;
  return r;
}

moeplan::perf::PublishedPrediction prediction(double measured, double predicted) {
  moeplan::perf::PublishedPrediction p;
  p.measured_iteration_s = measured;
  p.predicted_iteration_s = predicted;
  p.error_pct = 100 * (predicted - measured) / measured;
  return p;
}

}  // namespace

TEST_CASE("perf::summarize_published: errors and pairs ranked in the measured order (by hand)", "[perf][published]") {
  // A, B, C: one model, GPU count, sequence and batch, three mappings (tp 1, 2, 4).
  // D: another batch (not comparable). E: A's mapping again (not a pair with A).
  const std::vector<moeplan::io::PublishedRun> runs = {run(1, 16), run(2, 16), run(4, 16), run(1, 32), run(1, 16)};
  const std::vector<moeplan::perf::PublishedPrediction> p = {
      prediction(1.0, 1.5),   // A: +50%
      prediction(2.0, 1.2),   // B: -40%
      prediction(3.0, 4.0),   // C: +33.3%
      prediction(1.0, 1.0),   // D: 0%
      prediction(1.25, 1.0),  // E: -20%
  };
  const moeplan::perf::PublishedSummary s = moeplan::perf::summarize_published(runs, p);
  CHECK(s.rows == 5);
  // |errors| 0, 20, 33.3, 40, 50: the median is 33.3.
  CHECK(s.median_abs_error_pct == Approx(100.0 / 3));
  // (50 - 40 + 33.3 + 0 - 20) / 5 = 4.667
  CHECK(s.mean_signed_error_pct == Approx((50 - 40 + 100.0 / 3 - 20) / 5));
  // Pairs: A-B (measured A faster, predicted slower: out of order), A-C (in
  // order), B-C (in order), B-E (measured E faster, predicted E faster: in
  // order), C-E (in order); A-E share a mapping, D has another batch.
  CHECK(s.pairs == 5);
  CHECK(s.pairs_in_order == 4);
  CHECK(s.memory_rows == 0);
}

TEST_CASE("perf::summarize_published: the mapping predicted fastest against the one measured fastest (by hand)",
          "[perf][published]") {
  // Group 1 (batch 16): tp 1, 2, 4 measured 1.0, 2.0, 3.0 s; predicted 1.5, 1.2,
  // 4.0: the model picks tp 2, measured fastest is tp 1: a miss, the pick
  // predicted (1.5 - 1.2) / 1.5 = 20% faster than tp 1.
  // Group 2 (batch 32): tp 1 measured twice (1.0 and 0.8 s, two containers) and
  // tp 2 (0.9 s); predicted 1.0, 1.0, 1.1: the model picks tp 1, whose second
  // row ran fastest: a hit although its first row is slower than tp 2.
  // Batch 64: one mapping only, no group.
  const std::vector<moeplan::io::PublishedRun> runs = {run(1, 16), run(2, 16), run(4, 16), run(1, 32),
                                                       run(1, 32), run(2, 32), run(1, 64)};
  const std::vector<moeplan::perf::PublishedPrediction> p = {
      prediction(1.0, 1.5), prediction(2.0, 1.2), prediction(3.0, 4.0), prediction(1.0, 1.0),
      prediction(0.8, 1.0), prediction(0.9, 1.1), prediction(1.0, 1.0),
  };
  const moeplan::perf::PublishedSummary s = moeplan::perf::summarize_published(runs, p);
  CHECK(s.groups == 2);
  CHECK(s.groups_fastest_predicted == 1);
  REQUIRE(s.group_misses.size() == 1);
  CHECK(s.group_misses[0].predicted_margin_pct == Approx(20.0));
}

TEST_CASE("perf::summarize_published: a truncated model is another model, whatever its name (by hand)",
          "[perf][published]") {
  // Three rows the source names alike: tp 1 and tp 2 of the model cut to 12
  // layers, and tp 4 of it cut to 8 (SimuMax's S1-44 beside S1-01 to S1-04).
  // Only the 12-layer rows pair: measured 1.0 and 2.0 s, predicted 1.2 and
  // 1.1 (out of order). The 8-layer row, measured fastest and predicted
  // slowest, would have made two more pairs and a group of three.
  std::vector<moeplan::io::PublishedRun> runs = {run(1, 16), run(2, 16), run(4, 16)};
  for (moeplan::io::PublishedRun& r : runs) r.model_ref = "llama";
  runs[0].overrides = {{"model.num_layers", "12"}, {"schedule.cross_entropy_fusion", "te"}};
  runs[1].overrides = {{"model.num_layers", "12"}};  // a schedule fact alone does not part a model
  runs[2].overrides = {{"model.num_layers", "8"}};
  const std::vector<moeplan::perf::PublishedPrediction> p = {prediction(1.0, 1.2), prediction(2.0, 1.1),
                                                               prediction(0.5, 2.0)};
  const moeplan::perf::PublishedSummary s = moeplan::perf::summarize_published(runs, p);
  CHECK(s.pairs == 1);
  CHECK(s.pairs_in_order == 0);
  CHECK(s.groups == 1);
  CHECK(s.groups_fastest_predicted == 0);
}
