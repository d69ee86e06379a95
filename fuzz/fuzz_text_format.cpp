// libFuzzer target: the Protobuf text-format loader. The first byte picks the
// kind of file ('0' model, '1' cluster, '2' cost profile, '3' scenario,
// '4' sweep; any byte, modulo 5); the rest is the file, parsed, converted and
// validated as `moeplan validate` does. A scenario's references resolve to the
// bundled files; of a sweep, a few grid points are loaded as scenarios.

#include <cstddef>
#include <cstdint>
#include <string>

#include <moeplan/io/loader.hpp>

#include "fuzz_support.hpp"

namespace {

namespace io = moeplan::io;

// Loading every grid point of a large sweep would take seconds per input;
// these cover the first, last and middle points.
constexpr std::size_t kSweepPointsChecked = 4;

void load(unsigned kind, const std::string& text) {
  const std::string file = "fuzz-input.textproto";
  switch (kind) {
    case 0:
      io::load_model_text(file, text);
      break;
    case 1:
      io::load_cluster_text(file, text);
      break;
    case 2:
      io::load_profile_text(file, text);
      break;
    case 3:
      io::load_scenario_text(file, text);
      break;
    default: {
      const io::LoadedSweep sweep = io::load_sweep_text(file, text);
      const std::size_t n = sweep.size();
      for (std::size_t k = 0; k < kSweepPointsChecked && k < n; ++k) {
        const io::SweepPoint point = sweep.point(k * (n - 1) / (kSweepPointsChecked - 1));
        io::load_scenario(point.scenario, point.overrides);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  moeplan::fuzz::expect_input_errors_only([&] { load(moeplan::fuzz::selector(data[0], 5), text); });
  return 0;
}
