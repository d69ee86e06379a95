#pragma once
// What a moeplan fuzz target accepts as the outcome of one input: success, or
// a moeplan::Error of kind Input (bad input, reported). Everything else is a
// finding: a runtime Error (MOEPLAN_CHECK failures among them) aborts here;
// any other exception leaves the target and terminates; crashes, sanitizer
// reports, leaks and hangs are libFuzzer's to catch.

#include <cstdlib>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/family/builtin.hpp>

// libFuzzer's start-up hook: the bundled families' rules, as every moeplan
// program registers them, so that scenarios validate (their planners are not
// linked: family/builtin.hpp's rules need only the model layer).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  moeplan::family::register_builtin_family_rules();
  return 0;
}

namespace moeplan::fuzz {

/// Runs one input through f, letting only input errors through.
template <typename F>
void expect_input_errors_only(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Input) return;
    fmt::print(stderr, "moeplan fuzz: runtime error from input: {}\n", format_error(e));
    std::abort();
  }
}

/// The selector byte of inputs that start with one: '0' picks 0, '1' picks 1, ..., modulo count,
/// so that hand-written seeds stay readable.
inline unsigned selector(unsigned char byte, unsigned count) {
  return static_cast<unsigned char>(byte - '0') % count;
}

}  // namespace moeplan::fuzz
