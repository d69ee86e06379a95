// libFuzzer target: plan files read back (issue 28: `report` and `execute`
// trusted a hand-edited plan's numbers). The first byte picks what is done
// with the rest ('0' the plan alone, as `report PLAN` reads it; '1' the
// planned run: its scenario, resolved among the bundled ones, with its
// overrides and knobs set and validated, as `simulate PLAN` and `execute PLAN`
// load it; any byte, modulo 2).

#include <cstddef>
#include <cstdint>
#include <string>

#include <moeplan/io/plan_reader.hpp>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string file = "fuzz-input.textproto";
  moeplan::fuzz::expect_input_errors_only([&] {
    if (moeplan::fuzz::selector(data[0], 2) == 0)
      moeplan::io::load_plan_text(file, text);
    else
      moeplan::io::load_planned_scenario_text(file, text);
  });
  return 0;
}
