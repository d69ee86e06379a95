#include <moeplan/core/median.hpp>

#include <algorithm>

#include <moeplan/core/error.hpp>

namespace moeplan {

double median(std::vector<double> values) {
  MOEPLAN_CHECK(!values.empty(), "median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace moeplan
