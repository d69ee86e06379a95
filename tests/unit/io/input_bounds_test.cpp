// Inputs far outside what the loader can represent or what physics allows
// (issue 13): the fuzz targets' findings and the plausibility bounds. Each
// case names what the old code did with the input.

#include <limits>
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>

#include "proto_text.hpp"

namespace io = moeplan::io;
using moeplan::Error;

namespace {

// The one-line error of f(), or "" if it succeeds; only input errors are expected.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.kind() == moeplan::ErrorKind::Input);
    return moeplan::format_error(e);
  }
  return "";
}

// A bundled file's text with one piece replaced (the piece must be there).
std::string bundled_with(const std::string& relative, const std::string& from, const std::string& to) {
  std::string text = io::read_text_file(std::string(MOEPLAN_SOURCE_DIR) + "/" + relative);
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// A 4-block model whose MoE blocks follow moe_layer_interval / offset.
std::string model_with_interval(const std::string& interval, const std::string& offset) {
  return fmt::format(
      "name: \"m\" num_layers: 4 d_model: 256 num_heads: 4 vocab_size: 1000 dtype_bytes: 2 ffn_hidden: 1024\n"
      "moe {{ num_experts: 4 top_k: 1 capacity_factor: 1.0 expert_type: GELU_FFN expert_ffn_hidden: 512\n"
      "       moe_layer_interval: {} moe_layer_offset: {} }}\n",
      interval, offset);
}

// A sweep over one bundled scenario with the given axes.
std::string sweep_with(const std::vector<std::vector<std::string>>& axes) {
  std::string text = "name: \"big\" scenarios: \"foldmoe-gpt-moe-m-16k\"\n";
  for (std::size_t a = 0; a < axes.size(); ++a) {
    text += fmt::format("axes {{ field: \"workload.seq_len{}\"", a);
    for (const std::string& v : axes[a]) text += fmt::format(" values: \"{}\"", v);
    text += " }\n";
  }
  return text;
}

}  // namespace

TEST_CASE("io::load_scenario refuses a very negative size before multiplying it", "[io]") {
  // Found by fuzz_text_format. Without global_batch_size the default is
  // micro_batch_size x dp; dp is 1024 / (tp cp pp) = 1024 on dgx-h100, and
  // -2^62 x 1024 overflows int64 (undefined; UBSan stops there). The old code
  // multiplied first and only validation, later, said "must be positive".
  const std::string scenario =
      "name: \"s\" model_ref: \"mixtral-8x7b\" cluster_ref: \"dgx-h100\"\n"
      "parallelism { tp: 1 ep: 8 }\n"
      "workload { seq_len: 4096 micro_batch_size: -4611686018427387904 }\n";
  const std::string message = error_of([&] { io::load_scenario_text("inline.textproto", scenario); });
  CHECK(message.find("workload.micro_batch_size: must not be negative, got -4611686018427387904") !=
        std::string::npos);
}

TEST_CASE("io::load_model_text steps moe_layer_interval without overflowing", "[io]") {
  // Found by fuzz_text_format: with offset 1 and interval 2^63 - 1, the old
  // loop's layer += interval overflowed to a negative block index and wrote
  // outside the flag vector (a crash). Blocks offset, offset + interval, ...
  // below num_layers are MoE: with this interval only block 1.
  const moeplan::model::ModelSpec m =
      io::load_model_text("inline.textproto", model_with_interval("9223372036854775807", "1"));
  CHECK(m.moe_layer == std::vector<bool>{false, true, false, false});
  // An ordinary interval still steps by itself: blocks 1 and 3.
  CHECK(io::load_model_text("inline.textproto", model_with_interval("2", "1")).moe_layer ==
        std::vector<bool>{false, true, false, true});
}

TEST_CASE("io::load_sweep_text refuses grids of more points than allowed, and says how many", "[io]") {
  // Found by fuzz_text_format (timeouts): the old code expanded every grid.
  // 5 axes of 10 values are 10^5 points, above the 16384 allowed by default.
  const std::vector<std::string> ten{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"};
  const std::string message = error_of([&] { io::load_sweep_text("big.textproto", sweep_with({ten, ten, ten, ten, ten})); });
  CHECK(message.find("axes: the grid has 100000 points, more than the 16384 allowed") != std::string::npos);
  // A caller may allow more (sweep --max-points): the same grid loads.
  CHECK(io::load_sweep_text("big.textproto", sweep_with({ten, ten, ten, ten, ten}), 100000).size() == 100000);
  // 4 such axes are 10^4 points, within the default.
  CHECK(io::load_sweep_text("big.textproto", sweep_with({ten, ten, ten, ten})).size() == 10000);
  // Issue 14 item 4: 30 axes of 10 values are 10^30 points, past 2^64: the
  // count saturates instead of wrapping to a small number that would pass.
  const std::string huge = error_of([&] {
    io::load_sweep_text("big.textproto", sweep_with(std::vector<std::vector<std::string>>(30, ten)), std::numeric_limits<std::size_t>::max());
  });
  CHECK(huge.find("the grid has more than 2^64 points") != std::string::npos);
}

TEST_CASE("io::LoadedSweep makes each grid point on demand, last axis fastest", "[io]") {
  // 3 x 2 grid: point i has digits (i / 2, i % 2). The old loader held every
  // point (an 8 x 100 grid reached 11-16 GB); the new one holds the axes only.
  const io::LoadedSweep sweep = io::load_sweep_text("g.textproto", sweep_with({{"1", "2", "4"}, {"1024", "2048"}}));
  REQUIRE(sweep.size() == 6);
  const io::SweepPoint p3 = sweep.point(3);  // digits (1, 1): values "2" and "2048"
  REQUIRE(p3.overrides.size() == 2);
  CHECK(p3.overrides[0].value == "2");
  CHECK(p3.overrides[1].value == "2048");
  CHECK(p3.overrides[1].origin_field == "axes[1].values[1]");
  const io::SweepPoint p4 = sweep.point(4);  // digits (2, 0): "4" and "1024"
  CHECK(p4.labels[0].second == "4");
  CHECK(p4.labels[1].second == "1024");
  // A grid of 10^8 points is allowed when asked for and costs no memory per
  // point: its last point is made directly (digits all 9).
  const std::vector<std::string> ten{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
  const io::LoadedSweep big = io::load_sweep_text("g.textproto", sweep_with(std::vector<std::vector<std::string>>(8, ten)),
                                                  100000000);
  REQUIRE(big.size() == 100000000);
  const io::SweepPoint last = big.point(big.size() - 1);
  for (const io::Override& o : last.overrides) CHECK(o.value == "9");
}

TEST_CASE("io::load_cluster_text refuses hardware figures far outside physical reality", "[io]") {
  // Issue 13: a GPU of 1e-300 TFLOP/s was accepted (and gave an MFU of 4.7e302).
  // Bounds and their sources: src/model/validate.cpp. Each case was accepted before.
  struct Case {
    const char* from;
    const char* to;
    const char* error;
  };
  const Case cases[] = {
      {"peak_tflops_bf16: 989.5", "peak_tflops_bf16: 1e-300",
       "gpu.peak_tflops_bf16: 1e-300 TFLOP/s is outside the plausible range [0.01, 100000] TFLOP/s"},
      {"peak_tflops_fp16: 989.5", "peak_tflops_fp16: 2e5",
       "gpu.peak_tflops_fp16: 200000 TFLOP/s is outside the plausible range"},
      {"peak_tflops_fp32: 67", "peak_tflops_fp32: 0.001", "gpu.peak_tflops_fp32: 0.001 TFLOP/s is outside"},
      {"memory_gib: 80", "memory_gib: 1e-9", "gpu.memory_gib: 1e-09 GiB is outside the plausible range [0.25, 16384]"},
      {"memory_gib: 80", "memory_gib: 1e12", "gpu.memory_gib: 1000000000000 GiB is outside"},
      {"bandwidth_gbit_s: 3600", "bandwidth_gbit_s: 1e-6", "intra_link.bandwidth_gbit_s: 1e-06 Gbit/s is outside"},
      {"bandwidth_gbit_s: 400", "bandwidth_gbit_s: 1e200", "inter_link.bandwidth_gbit_s: 1e+200 Gbit/s is outside"},
      {"bandwidth_gbit_s: 400", "bandwidth_gbit_s: -5", "inter_link.bandwidth_gbit_s: -5 Gbit/s is outside"},
      // Issue 14 item 8f: figures whose conversion overflows (1e300 x 2^30) are named as given, not as inf.
      {"memory_gib: 80", "memory_gib: 1e300",
       "gpu.memory_gib: 1e+300 GiB is outside the plausible range [0.25, 16384] GiB"},
      {"peak_tflops_fp16: 989.5", "peak_tflops_fp16: 1e300", "gpu.peak_tflops_fp16: 1e+300 TFLOP/s is outside"},
      {"bandwidth_gbit_s: 400", "bandwidth_gbit_s: 1e308", "inter_link.bandwidth_gbit_s: 1e+308 Gbit/s is outside"},
      {"ports_per_node: 8", "ports_per_node: 1000000", "inter_link.ports_per_node: 1000000 ports per node"},
  };
  for (const Case& c : cases) {
    INFO(c.to);
    const std::string text = bundled_with("scenarios/clusters/dgx-h100.textproto", c.from, c.to);
    const std::string message = error_of([&] { io::load_cluster_text("dgx-h100.textproto", text); });
    INFO(message);
    CHECK(message.find(c.error) != std::string::npos);
    CHECK(message.rfind("dgx-h100.textproto:", 0) == 0);  // located in the file
  }
  // An NVLink domain must be whole nodes (issue 26 item 2).
  CHECK(error_of([] {
          io::load_cluster_text("gb200-nvl72.textproto",
                                bundled_with("scenarios/clusters/gb200-nvl72.textproto", "nvlink_domain_gpus: 72",
                                             "nvlink_domain_gpus: 6"));
        }).find("nvlink_domain_gpus: 6 GPUs is not a whole number of 4-GPU nodes") != std::string::npos);
  CHECK(error_of([] {
          io::load_cluster_text("gb200-nvl72.textproto",
                                bundled_with("scenarios/clusters/gb200-nvl72.textproto", "nvlink_domain_gpus: 72",
                                             "nvlink_domain_gpus: -72"));
        }).find("nvlink_domain_gpus") != std::string::npos);
  // A peak of 0 still means "no such precision" (flowmoe-cluster2 has no BF16).
  CHECK(error_of([] { io::load_cluster("flowmoe-cluster2"); }).empty());
  // The same bounds apply to --set on a scenario's cluster.
  CHECK(error_of([] {
          io::load_scenario("folding-mixtral-8x22b-16k-128", {{"cluster.gpu.peak_tflops_bf16", "1e-300"}});
        }).find("cluster.gpu.peak_tflops_bf16: 1e-300 TFLOP/s is outside") != std::string::npos);
}

TEST_CASE("io::load_profile_text refuses cost lines far outside physical reality", "[io]") {
  // Issue 13: a profile alpha of 9.2e18 ms was accepted. Bounds and sources:
  // src/model/validate.cpp. The first line of fsmoe-testbed-a-datasheet is a
  // GEMM (beta per FLOP); its A2A lines are per byte.
  const std::string profile = "calibration/profiles/fsmoe-testbed-a-datasheet.textproto";
  const std::string text = io::read_text_file(std::string(MOEPLAN_SOURCE_DIR) + "/" + profile);
  REQUIRE(error_of([&] { io::load_profile_text("p.textproto", text); }).empty());
  const auto first_value = [&](const std::string& field) {
    const std::size_t at = text.find(field + ": ");
    REQUIRE(at != std::string::npos);
    const std::size_t start = at + field.size() + 2;
    return text.substr(at, text.find_first_of(" \n", start) - at);
  };
  struct Case {
    std::string from;
    std::string to;
    const char* error;
  };
  const Case cases[] = {
      {first_value("alpha_ms"), "alpha_ms: 9.2e18", "costs[0].alpha_ms: a startup of 9.2e+18 ms is implausible"},
      {first_value("beta_ms"), "beta_ms: 1", "costs[0].beta_ms: 1 ms per FLOP is outside the plausible range"},
      {first_value("beta_ms"), "beta_ms: 1e-300", "costs[0].beta_ms: 1e-300 ms per FLOP is outside"},
      {"name:", "overlap_compute_slowdown: 1e6 name:", "overlap_compute_slowdown: 1000000 is implausible"},
  };
  for (const Case& c : cases) {
    INFO(c.to);
    const std::string message =
        error_of([&] { io::load_profile_text("p.textproto", bundled_with(profile, c.from, c.to)); });
    CHECK(message.find(c.error) != std::string::npos);
  }
}

TEST_CASE("io::load_scenario refuses an implausible straggler factor", "[io]") {
  // Issue 13 plausibility: slow_ranks_compute_factor 1e300 was accepted and
  // `simulate --set schedule.mode=multi_rank` printed an iteration of 5e299 ms.
  const std::string message = error_of([] {
    io::load_scenario("flowmoe-gpt2-tiny-moe-c1",
                      {{"schedule.mode", "multi_rank"}, {"schedule.slow_ranks_compute_factor", "1e300"}});
  });
  CHECK(message.find("schedule.slow_ranks_compute_factor: 1e+300 is implausible: at most 100") != std::string::npos);
  CHECK(error_of([] {
          io::load_scenario("flowmoe-gpt2-tiny-moe-c1",
                            {{"schedule.mode", "multi_rank"}, {"schedule.slow_ranks_compute_factor", "1.5"}});
        }).empty());
}
