// libFuzzer target: --set overrides. The first byte picks a bundled scenario
// ('0' to '3'; any byte, modulo 4); each following line is one
// "field.path=value" override, split by io::parse_override and applied by
// io::load_scenario (io::set_scalar_field, then conversion and validation),
// as `moeplan validate SCENARIO --set ...` does.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <moeplan/io/loader.hpp>

#include "fuzz_support.hpp"

namespace {

namespace io = moeplan::io;

// One scenario of each schedule family, with and without inline `set:` lines.
constexpr const char* kScenarios[] = {"foldmoe-gpt-moe-m-16k", "fsmoe-table4-testbed-a", "flowmoe-gpt2-tiny-moe-c1",
                                      "folding-mixtral-8x22b-16k-128"};
constexpr std::size_t kMaxOverrides = 64;

void apply(unsigned scenario, const std::string& lines) {
  std::vector<io::Override> overrides;
  std::istringstream in(lines);
  for (std::string line; std::getline(in, line) && overrides.size() < kMaxOverrides;)
    overrides.push_back(io::parse_override(line));
  io::load_scenario(kScenarios[scenario], overrides);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string lines(reinterpret_cast<const char*>(data) + 1, size - 1);
  moeplan::fuzz::expect_input_errors_only([&] { apply(moeplan::fuzz::selector(data[0], 4), lines); });
  return 0;
}
