// libFuzzer target: calibration input, as `moeplan fit` reads it. The first
// byte holds the options: bit 0 nccl-tests output (else the timing CSV),
// bit 1 in-place times, bit 2 an --op, bit 3 a --link, bit 4 a --group, bits
// 5-7 which op, link, group and file name. The rest is the file. Samples that
// were read are fitted (cost::fit_profile); a fit that succeeds must write a
// profile that the loader reads back, as the next `moeplan` command will.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/cost/fit.hpp>
#include <moeplan/io/calibration_input.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/profile_writer.hpp>

#include "fuzz_support.hpp"

namespace {

namespace io = moeplan::io;
namespace model = moeplan::model;

// nccl-tests names its binaries after the collective; the file name is the fallback for the op.
constexpr const char* kFileNames[] = {"all_reduce_perf.log", "alltoall_perf.log", "sendrecv_perf.log", "timings.log"};

io::NcclTestsOptions options_of(unsigned flags) {
  const unsigned pick = flags >> 5;
  io::NcclTestsOptions options;
  options.use_in_place = (flags & 2) != 0;
  if ((flags & 4) != 0) options.op = static_cast<model::OpClass>(pick % 7);
  if ((flags & 8) != 0) options.link = pick % 2 == 0 ? model::LinkClass::Intra : model::LinkClass::Inter;
  if ((flags & 16) != 0) options.group = 1 + pick;
  return options;
}

std::optional<moeplan::cost::ProfileFit> read_and_fit(unsigned flags, const std::string& text) {
  std::optional<moeplan::cost::ProfileFit> fit;
  moeplan::fuzz::expect_input_errors_only([&] {
    const std::vector<model::TimingSample> samples =
        (flags & 1) != 0 ? io::read_nccl_tests(kFileNames[(flags >> 5) % 4], text, options_of(flags))
                         : io::read_timing_csv("timings.csv", text);
    fit = moeplan::cost::fit_profile(samples, "fuzz", "fuzz-cluster");
  });
  return fit;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::optional<moeplan::cost::ProfileFit> fit = read_and_fit(data[0], text);
  // Outside expect_input_errors_only: an accepted fit that writes an invalid profile is a finding.
  if (fit) io::load_profile_text("fitted.textproto", io::profile_to_textproto(fit->profile, "fuzz"));
  return 0;
}
