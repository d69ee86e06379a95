#include <moeplan/core/portable_math.hpp>

#include <cmath>

#include <moeplan/core/error.hpp>

namespace moeplan {
namespace {
constexpr double kLn2 = 0.6931471805599453;  // ln 2 rounded to a double (0.693147180559945309417...)
}  // namespace

// splitmix64's step (Steele, Lea and Flood 2014; the seeding xoshiro's authors recommend).
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double portable_log(double x) {
  MOEPLAN_CHECK(x > 0 && std::isfinite(x), "portable_log of a positive finite number");
  int e = 0;
  double m = std::frexp(x, &e);  // x = m 2^e, m in [0.5, 1): exact
  if (m < 0.7071067811865476) {  // bring m into [sqrt(1/2), sqrt(2)) for a faster series
    m *= 2.0;
    --e;
  }
  // ln m = 2 atanh(t) = 2 (t + t^3/3 + t^5/5 + ...), t = (m - 1)/(m + 1), |t| < 0.1716.
  const double t = (m - 1.0) / (m + 1.0);
  const double t2 = t * t;
  double term = t, sum = 0;
  for (int k = 1; k < 60; k += 2) {  // |t|^59 < 1e-45: far below a double's precision
    sum += term / k;
    term *= t2;
  }
  return static_cast<double>(e) * kLn2 + 2.0 * sum;
}

double portable_exp(double x) {
  MOEPLAN_CHECK(std::isfinite(x), "portable_exp of a finite number");
  if (x < -745.0) return 0.0;  // below the smallest subnormal
  MOEPLAN_CHECK(x < 709.0, "portable_exp: result would overflow");
  const double n = std::floor(x / kLn2 + 0.5);
  const double r = x - n * kLn2;  // |r| <= ln2 / 2 (+ rounding)
  // e^r by its Taylor series: |r|^25 / 25! < 1e-36.
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 26; ++k) {
    term *= r / k;
    sum += term;
  }
  return std::ldexp(sum, static_cast<int>(n));
}

}  // namespace moeplan
