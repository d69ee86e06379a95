#pragma once
// Results outside what physics allows are bugs, never outputs: an iteration
// time that is not positive and finite, a rank busier than the iteration is
// long, an MFU of 1 or more. Each check throws moeplan::Error of kind Runtime
// ("internal error: ..."; the CLI exits 1) naming the result and the value.

#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/mapping_run.hpp>

namespace moeplan::plan {

/// A simulated schedule: iteration > 0 and finite; forward, compute,
/// exposed communication and bubble times finite, non-negative and at most
/// the iteration (a rank's compute stream is busy at most all of it).
void check_plausible(const Evaluation& e);

/// A priced mapping: iteration > 0 and finite, MFU in (0, 1), memory per GPU
/// finite and positive, the breakdown finite and non-negative.
void check_plausible(const MappingResult& r);

/// A speed-up: finite and positive.
void check_plausible_speedup(double speedup, const char* what);

}  // namespace moeplan::plan
