// libFuzzer target: Chakra traces, as `moeplan import-chakra` reads them. The
// first byte holds the options: bit 0 prices communication by the cost model
// (else by the trace). The rest is the files of ranks 0, 1, ... separated by
// the bytes "=RANK=" (at most 4 files), on a cluster of one node of 4 GPUs
// with a profile that has a line for every operation. What imports must run
// on the engine to a finite iteration, or stop at a deadlock of the trace's
// own making (import-chakra reports it as bad input).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/interop/chakra.hpp>
#include <moeplan/sim/engine.hpp>

#include "fuzz_support.hpp"

namespace {

namespace interop = moeplan::interop;
namespace model = moeplan::model;
using model::LinkClass;
using model::OpClass;

model::LinearCostSpec line(OpClass op, LinkClass link, std::int64_t group, double alpha, double beta) {
  model::LinearCostSpec c;
  c.op = op;
  c.link = link;
  c.group = group;
  c.alpha_ms = alpha;
  c.beta_ms_per_unit = beta;
  return c;
}

const moeplan::cost::CostModel& costs() {
  static const moeplan::cost::CostModel model(model::CostProfileSpec{
      "fuzz",
      "fuzz",
      {line(OpClass::Gemm, LinkClass::Local, 1, 0.01, 1e-12),
       line(OpClass::Attention, LinkClass::Local, 1, 0.01, 1e-12), line(OpClass::A2A, LinkClass::Intra, 4, 0.02, 1e-9),
       line(OpClass::AllGather, LinkClass::Intra, 4, 0.02, 1e-9),
       line(OpClass::ReduceScatter, LinkClass::Intra, 4, 0.02, 1e-9),
       line(OpClass::AllReduce, LinkClass::Intra, 4, 0.02, 2e-9), line(OpClass::P2P, LinkClass::Intra, 2, 0.01, 1e-9)},
      1.2,
      1.1});
  return model;
}

model::ClusterSpec cluster() {
  model::ClusterSpec c;
  c.name = "fuzz";
  c.num_nodes = 1;
  c.gpus_per_node = 4;
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool model_pricing = (moeplan::fuzz::selector(data[0], 2) & 1) != 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  interop::ChakraInput input;
  input.directory = "fuzz";
  input.comm_groups_path = "fuzz/comm_groups.json";
  std::size_t at = 0;
  for (std::int32_t rank = 0; rank < 4; ++rank) {
    const std::size_t end = rank == 3 ? std::string_view::npos : rest.find("=RANK=", at);
    const std::string_view file = rest.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    input.files.push_back({"fuzz/trace." + std::to_string(rank) + ".et", rank, std::string(file)});
    if (end == std::string_view::npos) break;
    at = end + 6;
  }
  moeplan::fuzz::expect_input_errors_only([&] {
    const interop::ChakraImport imported = interop::import_chakra(
        input, cluster(), costs(), model_pricing ? interop::CommPricing::Model : interop::CommPricing::Trace);
    moeplan::sim::EngineOptions options;
    options.overlap_compute_slowdown = imported.built.overlap_compute_slowdown;
    options.overlap_comm_slowdown = imported.built.overlap_comm_slowdown;
    try {
      const moeplan::sim::Timeline timeline = moeplan::sim::simulate(imported.built.graph, options);
      if (!std::isfinite(timeline.makespan_ms) || timeline.makespan_ms < 0) std::abort();
    } catch (const moeplan::Error& e) {
      if (e.reason().rfind("deadlock:", 0) != 0) throw;
    }
  });
  return 0;
}
