#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/fit.hpp>
#include <moeplan/io/calibration_input.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/validate.hpp>

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
  // Sizes in kB: a slope of 1.2 ms per byte is beyond the plausible 1 ms per byte.
  const std::vector<model::TimingSample> poor{sample(1e3, 1), sample(2e3, 5), sample(3e3, 2), sample(4e3, 6)};
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

namespace {

std::string calibration_text(const std::string& file) {
  std::ifstream in(std::string(MOEPLAN_TEST_DATA_DIR) + "/calibration/" + file);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The one-line error of f(), or "" if it succeeds; only input errors are expected.
template <typename F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Input);
    return format_error(e);
  }
  return "";
}

// text with the first occurrence of from replaced by to.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("io::read_nccl_tests refuses a compute op", "[cost][io]") {
  // Found by fuzz_calibration: --op gemm on nccl-tests output made GEMM
  // samples on link INTER, whose fitted line the profile loader then refused
  // ("compute operations use link LOCAL"); the old reader accepted the op.
  for (const model::OpClass op : {model::OpClass::Gemm, model::OpClass::Attention}) {
    io::NcclTestsOptions options;
    options.op = op;
    const std::string message =
        input_error_of([&] { io::read_nccl_tests("all_reduce_perf.log", calibration_text("all_reduce_perf.log"), options); });
    CHECK(message.find("all_reduce_perf.log:1:1: op: nccl-tests times collectives") != std::string::npos);
  }
}

TEST_CASE("io::read_nccl_tests leaves the placement out when a given link contradicts the host names", "[cost][io]") {
  // Found by fuzz_calibration. all_reduce_perf.log has 16 ranks on 2 hosts
  // (8 each); all_gather_perf.log 8 ranks on 1 host. The old reader set
  // ranks_per_node from the host names whatever --link said: 8 of 16 on an
  // INTRA line, or 8 of 8 on an INTER one, lines that validation refuses
  // (an INTRA line has ranks_per_node = group, an INTER line fewer), so the
  // fitted profile could not be loaded. A --link against the host names means
  // they do not tell the nodes (containers can share one host name); the
  // placement is then unknown, as with --group.
  struct Case {
    const char* file;
    model::LinkClass link;
  };
  for (const Case& c : {Case{"all_reduce_perf.log", model::LinkClass::Intra},
                        Case{"all_gather_perf.log", model::LinkClass::Inter}}) {
    INFO(c.file);
    io::NcclTestsOptions options;
    options.link = c.link;
    const auto samples = io::read_nccl_tests(c.file, calibration_text(c.file), options);
    CHECK(samples.front().link == c.link);
    CHECK_FALSE(samples.front().ranks_per_node.has_value());
    CHECK_NOTHROW(model::validate(cost::fit_profile(samples, "p", "c").profile));
  }
  // Where the link agrees with the host names the placement is kept: 8 per node.
  const auto agreed = io::read_nccl_tests("all_reduce_perf.log", calibration_text("all_reduce_perf.log"), {});
  CHECK(agreed.front().link == model::LinkClass::Inter);
  CHECK(agreed.front().ranks_per_node == 8);
}

TEST_CASE("calibration readers refuse hexadecimal numbers", "[cost][io]") {
  // strtod reads "0x1p30" as 2^30; the old readers fitted such cells silently.
  CHECK(input_error_of([] {
          io::read_timing_csv("t.csv", "op,link,group,size,time_ms\ngemm,local,1,0x1p30,0.5\n");
        }).find("t.csv:2:1: size: expected a decimal number, got '0x1p30'") != std::string::npos);
  CHECK(input_error_of([] {
          io::read_timing_csv("t.csv", "op,link,group,size,time_ms\ngemm,local,1,1e9,0X1P-1\n");
        }).find("t.csv:2:1: time_ms: expected a decimal number") != std::string::npos);
  // Line 24, the first row: "1048576 262144 float sum -1 91.2 11.50 21.57 0 90.5 11.58 21.72 0".
  const std::string log = replaced(calibration_text("all_reduce_perf.log"), "  91.2   11.50", "0x40.6   11.50");
  CHECK(input_error_of([&] { io::read_nccl_tests("all_reduce_perf.log", log, {}); })
            .find("all_reduce_perf.log:24:1: out-of-place time: expected a decimal number, got '0x40.6'") !=
        std::string::npos);
}

TEST_CASE("io::read_nccl_tests refuses rows with wrong results", "[cost][io]") {
  // nccl-tests counts wrong elements in the #wrong columns (out-of-place and
  // in-place); a row with any is a broken run, not a timing. The old reader
  // fitted it. "N/A" (results not checked, -c 0) is accepted.
  // Line 24, the first row: "1048576 262144 float sum -1 91.2 11.50 21.57 0 90.5 11.58 21.72 0".
  const std::string text = calibration_text("all_reduce_perf.log");
  const std::string wrong_out = replaced(text, "21.57      0", "21.57      3");
  CHECK(input_error_of([&] { io::read_nccl_tests("all_reduce_perf.log", wrong_out, {}); })
            .find("all_reduce_perf.log:24:1: #wrong: 3 wrong values in the out-of-place result") != std::string::npos);
  const std::string wrong_in = replaced(text, "21.72      0", "21.72    1e+06");
  CHECK(input_error_of([&] { io::read_nccl_tests("all_reduce_perf.log", wrong_in, {}); })
            .find("all_reduce_perf.log:24:1: #wrong: 1e+06 wrong values in the in-place result") != std::string::npos);
  const std::string unchecked = replaced(replaced(text, "21.57      0", "21.57    N/A"), "21.72      0", "21.72    N/A");
  CHECK(io::read_nccl_tests("all_reduce_perf.log", unchecked, {}).size() == 9);
}

TEST_CASE("calibration readers and cost::fit_profile refuse implausible timings and lines", "[cost][io]") {
  // Bounds and their sources: model::kMaxSampleSize, kMaxSampleTimeMs
  // (include/moeplan/model/specs.hpp) and src/model/validate.cpp. The old code
  // fitted all of these; the last wrote a profile that said 1 ms per FLOP.
  CHECK(input_error_of([] {
          io::read_timing_csv("t.csv", "op,link,group,size,time_ms\ngemm,local,1,1e300,0.5\n");
        }).find("t.csv:2:1: size: 1e+300 is implausible") != std::string::npos);
  CHECK(input_error_of([] {
          io::read_timing_csv("t.csv", "op,link,group,size,time_ms\ngemm,local,1,1e9,1e300\n");
        }).find("t.csv:2:1: time_ms: 1e+300 ms is implausible") != std::string::npos);
  // A GEMM of 1, 2 and 3 FLOP taking 1, 2 and 3 ms: 1 ms per FLOP, 1 kFLOP/s.
  std::vector<model::TimingSample> slow;
  for (int n = 1; n <= 3; ++n) {
    model::TimingSample s = sample(n, n);
    s.op = model::OpClass::Gemm;
    s.link = model::LinkClass::Local;
    s.group = 1;
    s.where = SourceLocation{"t.csv", n + 1, 1};
    slow.push_back(s);
  }
  CHECK(input_error_of([&] { cost::fit_profile(slow, "p", "c"); })
            .find("t.csv:2:1: gemm local group 1: fitted line refused: beta_ms: 1 ms per FLOP is outside") !=
        std::string::npos);
  // Found by fuzz_calibration's long run (before the check): an all-reduce of
  // 1, 2 and 3 GB in 1, 1.000001 and 1.000002 ms has a slope of 1e-15 ms per
  // byte (1000 PB/s), whose profile the loader refused after the fit wrote it.
  const std::vector<model::TimingSample> fast{sample(1e9, 1.0), sample(2e9, 1.000001), sample(3e9, 1.000002)};
  const std::string too_fast = input_error_of([&] { cost::fit_profile(fast, "p", "c"); });
  INFO(too_fast);
  CHECK(too_fast.find("allreduce inter group 16: fitted line refused: beta_ms: ") != std::string::npos);
  CHECK(too_fast.find(" ms per byte is outside the plausible range [1e-12, 1]") != std::string::npos);
}
