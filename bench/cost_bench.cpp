// Speed of one cost prediction (issue 3 target: under 50 ns). Run:
//   build/bench/moeplan_cost_bench
#include <benchmark/benchmark.h>

#include <moeplan/cost/cost_model.hpp>
#include <moeplan/io/loader.hpp>

namespace {

const moeplan::cost::CostModel& testbed_a() {
  static const moeplan::cost::CostModel costs(moeplan::io::load_profile("fsmoe-testbed-a"));
  return costs;
}

// A measured group: the line as stored.
void BM_PredictMeasuredGroup(benchmark::State& state) {
  const auto& costs = testbed_a();
  double size = 1 << 20;
  for (auto _ : state) {
    benchmark::DoNotOptimize(costs.predict(moeplan::model::OpClass::A2A, moeplan::model::LinkClass::Inter, 6, size));
    size += 1.0;
  }
}
BENCHMARK(BM_PredictMeasuredGroup);

// Another group: nearest measured line, scaled by bus-bandwidth factors.
void BM_PredictScaledGroup(benchmark::State& state) {
  const auto& costs = testbed_a();
  double size = 1 << 20;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        costs.predict(moeplan::model::OpClass::AllReduce, moeplan::model::LinkClass::Inter, 12, size));
    size += 1.0;
  }
}
BENCHMARK(BM_PredictScaledGroup);

void BM_PredictGemm(benchmark::State& state) {
  const auto& costs = testbed_a();
  double flops = 1e9;
  for (auto _ : state) {
    benchmark::DoNotOptimize(costs.compute(moeplan::model::OpClass::Gemm, flops));
    flops += 1.0;
  }
}
BENCHMARK(BM_PredictGemm);

}  // namespace

BENCHMARK_MAIN();
