#pragma once
// The built-in benchmarks of `moeplan bench` (docs/performance.md records
// their figures with the machine): the engine on a 1M-task graph and a
// 1,024-rank FlowMoE graph, FSMoE's closed-form planner on Table 4, the
// mapping search, and the capacity question. Speed targets are checked here,
// never by timed unit tests.

#include <string>

#include <moeplan/io/json.hpp>

namespace moeplan::perf {

/// @brief What a benchmark measured: its JSON (`bench --json`) and its text.
struct BenchReport {
  io::Json json;
  std::string text;
};

/// 1M tasks on the engine (a random DAG, and the same at 50% communication on
/// shared links), then FlowMoE on 1,024 ranks built and run.
BenchReport bench_engine();
/// FSMoE's Algorithm 1 on every Table 4 configuration, then the whole sweep on
/// 2 threads; then `plan` of DeepSeek-V3 on 1,024 and 16,384 H100 (issue 31).
BenchReport bench_planner();
/// Every folded and coupled mapping of Mixtral-8x22B at 128K on 1,024 H100, 2 threads.
BenchReport bench_folding();
/// Mixtral-8x22B on DGX H100, 2T tokens in 30 days, 64..4,096 GPUs: each count's joint search timed.
BenchReport bench_capacity();

}  // namespace moeplan::perf
