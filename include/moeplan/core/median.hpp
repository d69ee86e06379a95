#pragma once
// The median the calibration and the benchmarks report, defined once.

#include <vector>

namespace moeplan {

/// Median (mean of the two middle values for an even count). Empty: an internal error.
double median(std::vector<double> values);

}  // namespace moeplan
