#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/fit.hpp>
#include <moeplan/io/calibration_input.hpp>
#include <moeplan/io/loader.hpp>

using namespace moeplan;

namespace {

model::TimingSample sample(double size, double time_ms) {
  model::TimingSample s;
  s.op = model::OpClass::AllReduce;
  s.link = model::LinkClass::Inter;
  s.group = 16;
  s.size = size;
  s.time_ms = time_ms;
  return s;
}

// Squared Pearson correlation: equals R^2 of a least-squares line with intercept.
double squared_correlation(const std::vector<model::TimingSample>& samples) {
  double mx = 0, my = 0;
  for (const auto& s : samples) {
    mx += s.size;
    my += s.time_ms;
  }
  mx /= static_cast<double>(samples.size());
  my /= static_cast<double>(samples.size());
  double sxy = 0, sxx = 0, syy = 0;
  for (const auto& s : samples) {
    sxy += (s.size - mx) * (s.time_ms - my);
    sxx += (s.size - mx) * (s.size - mx);
    syy += (s.time_ms - my) * (s.time_ms - my);
  }
  return sxy * sxy / (sxx * syy);
}

}  // namespace

TEST_CASE("cost::fit_line recovers alpha and beta from noisy synthetic timings", "[cost]") {
  // t = 0.3 ms + 2.5e-8 ms/byte (40 GB/s), sizes doubling 1 KiB .. 256 MiB like
  // nccl-tests, five repetitions each, multiplicative noise uniform in +-2%.
  const double alpha = 0.3;
  const double beta = 2.5e-8;
  for (std::uint32_t seed : {1u, 2u, 3u, 42u}) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> noise(-0.02, 0.02);
    std::vector<model::TimingSample> samples;
    for (int rep = 0; rep < 5; ++rep)
      for (int i = 0; i < 19; ++i) {
        const double size = 1024.0 * std::pow(2.0, i);
        samples.push_back(sample(size, (alpha + beta * size) * (1.0 + noise(rng))));
      }
    const cost::LineFit fit = cost::fit_line(samples);
    INFO("seed " << seed);
    CHECK(fit.alpha_ms == Approx(alpha).epsilon(0.03));
    CHECK(fit.beta_ms_per_unit == Approx(beta).epsilon(0.03));
    CHECK(fit.r2 == Approx(squared_correlation(samples)).epsilon(1e-9));
    CHECK(fit.points == 95);
    REQUIRE(fit.residuals_ms.size() == samples.size());
    CHECK(fit.residuals_ms[0] == Approx(samples[0].time_ms - fit.alpha_ms - fit.beta_ms_per_unit * samples[0].size));
  }
}

TEST_CASE("cost::fit_line is exact on exact data", "[cost]") {
  const std::vector<model::TimingSample> samples{sample(1e9, 0.5 + 1e9 * 3e-11), sample(2e9, 0.5 + 2e9 * 3e-11),
                                                 sample(8e12, 0.5 + 8e12 * 3e-11)};
  const cost::LineFit fit = cost::fit_line(samples);
  CHECK(fit.alpha_ms == Approx(0.5).epsilon(1e-9));
  CHECK(fit.beta_ms_per_unit == Approx(3e-11).epsilon(1e-9));
  CHECK(fit.r2 == Approx(1.0));
}

TEST_CASE("cost::fit_line refuses what cannot be a cost line", "[cost]") {
  CHECK_THROWS_WITH(cost::fit_line({sample(1, 1), sample(1, 1.1), sample(2, 2)}), Catch::Contains("at least 3"));
  CHECK_THROWS_WITH(cost::fit_line({sample(1, 3), sample(2, 2), sample(3, 1)}), Catch::Contains("negative"));
  CHECK_THROWS_WITH(cost::fit_line({sample(1, 1), sample(2, NAN), sample(3, 3)}), Catch::Contains("finite"));
  CHECK_THROWS_WITH(cost::fit_line({sample(1, 1), sample(2, INFINITY), sample(3, 3)}), Catch::Contains("finite"));
}

TEST_CASE("cost::fit_profile warns on a poor fit and refits a negative intercept through the origin", "[cost]") {
  // Times fall back at the middle size: the line fits badly (r^2 < 0.99).
  const std::vector<model::TimingSample> poor{sample(1, 1), sample(2, 5), sample(3, 2), sample(4, 6)};
  const cost::ProfileFit fit = cost::fit_profile(poor, "p", "c");
  REQUIRE(fit.profile.costs.size() == 1);
  CHECK(fit.warnings.size() == 1);
  CHECK(fit.warnings[0].find("below 0.99") != std::string::npos);
  // Free fit: slope 21/200 = 0.105, intercept 59/30 - 0.105 x 20 = -0.1333 ms.
  // Through the origin: beta = sum(n t) / sum(n^2) = (9 + 40 + 90) / 1400.
  // r^2 with SS_tot = 2.206667 (mean 59/30): origin residuals -0.092857,
  // 0.014286, 0.021429 -> 0.995792; free residuals -1/60, 1/30, -1/60 -> 0.999245.
  const std::vector<model::TimingSample> negative{sample(10, 0.9), sample(20, 2.0), sample(30, 3.0)};
  const cost::ProfileFit refit = cost::fit_profile(negative, "p", "c");
  CHECK(refit.profile.costs[0].alpha_ms == 0.0);
  CHECK(refit.profile.costs[0].beta_ms_per_unit == Approx(139.0 / 1400.0).epsilon(1e-12));
  CHECK(refit.profile.costs[0].r2 == Approx(0.995792).epsilon(1e-6));
  REQUIRE(refit.reports.size() == 1);
  CHECK(refit.reports[0].through_origin);
  CHECK(refit.reports[0].r2_with_intercept == Approx(0.999245).epsilon(1e-6));
  CHECK(refit.warnings.front().find("refitted through the origin") != std::string::npos);
}

TEST_CASE("io::read_nccl_tests parses nccl-tests tables and they fit", "[cost][io]") {
  const std::string dir = std::string(MOEPLAN_TEST_DATA_DIR) + "/calibration/";
  struct Log {
    const char* file;
    model::OpClass op;
    model::LinkClass link;
    std::int64_t group;
    double busbw_bytes_per_s;  // what the fixture was generated with
  };
  const Log logs[] = {{"all_reduce_perf.log", model::OpClass::AllReduce, model::LinkClass::Inter, 16, 42e9},
                      {"all_gather_perf.log", model::OpClass::AllGather, model::LinkClass::Intra, 8, 360e9},
                      {"reduce_scatter_perf.log", model::OpClass::ReduceScatter, model::LinkClass::Intra, 8, 350e9},
                      {"alltoall_perf.log", model::OpClass::A2A, model::LinkClass::Inter, 16, 40e9}};
  for (const Log& log : logs) {
    INFO(log.file);
    const auto samples = io::read_calibration_file(dir + log.file, {});
    REQUIRE(samples.size() == 9);  // 1 MiB .. 256 MiB, doubling
    CHECK(samples[0].op == log.op);
    CHECK(samples[0].link == log.link);
    CHECK(samples[0].group == log.group);
    CHECK(samples[0].size == 1048576.0);
    // 3 header lines, one line per rank, then 4 more before the first row.
    CHECK(samples[0].where.line == 8 + log.group);
    const cost::LineFit fit = cost::fit_line(samples);
    // beta = factor(p) / busbw: the fit recovers the bus bandwidth within 3%.
    const double p = static_cast<double>(log.group);
    const double factor = log.op == model::OpClass::AllReduce ? 2 * (p - 1) / p : (p - 1) / p;
    CHECK(fit.beta_ms_per_unit == Approx(factor / log.busbw_bytes_per_s * 1e3).epsilon(0.03));
    CHECK(fit.r2 > 0.999);
  }
  // The out-of-place time is used unless told: first all_reduce row prints 64.4 us out-of-place.
  const auto in_place =
      io::read_calibration_file(dir + "all_reduce_perf.log", {std::nullopt, std::nullopt, std::nullopt, true});
  const auto out_of_place = io::read_calibration_file(dir + "all_reduce_perf.log", {});
  CHECK(in_place[0].time_ms != out_of_place[0].time_ms);
}
