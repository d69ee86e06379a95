#pragma once
// The reference executor's interface (issue 16): it replays the task graph the
// simulator built, with real work, and measures when each task ran. It reads
// the same dag::TaskGraph as sim::simulate and never changes the simulator's
// code path. Plain C++: a CUDA backend hides behind it (src/exec/cuda/, in the
// CUDA plug-in that the factory below loads); the host backend is always built.

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <moeplan/dag/task_graph.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/sim/engine.hpp>

namespace moeplan::exec {

/// @brief A collective (or a point-to-point transfer) of `size_bytes`
/// (nccl-tests' "size", as the cost model priced it) over global ranks.
struct CommWork {
  model::OpClass op = model::OpClass::A2A;
  double size_bytes = 0;
  std::vector<std::int32_t> ranks;  ///< members, ascending; P2P: {sender, receiver}
  /// Ranks the cost model priced it over: ranks.size() in a multi-rank graph,
  /// more in a symmetric one, which holds one rank of each group (0: ranks.size()).
  std::int32_t priced_group = 0;
};

/// @brief What one task does for real: a compute task's GEMMs and attention
/// core as its builder recorded them (dag::WorkShape: the GEMMs in order, then
/// the core), or a collective.
struct ReplayTask {
  std::variant<dag::WorkShape, CommWork> work;
};

/// @brief The graph's tasks as real work, index = dag::TaskId. Made by
/// make_replay_plan (src/exec/replay_plan.cpp) from the graph's recorded work.
struct ReplayPlan {
  std::vector<ReplayTask> tasks;
  std::int32_t ranks = 1;  ///< ranks the graph holds (1 for a symmetric graph)
};

/// @brief How a run is repeated.
struct ExecuteOptions {
  int warmup_iterations = 1;
  int iterations = 3;                 ///< measured; the median iteration is reported
  std::ostream* progress = nullptr;   ///< one line per iteration on rank 0 (stderr), or none
};

/// @brief What was measured: the median iteration's task times, in ms from
/// that iteration's start, in the layout of sim::Timeline so that the trace
/// writers and sim::summarize read it unchanged.
struct MeasuredRun {
  sim::Timeline timeline;
  std::vector<double> iteration_ms;  ///< every measured iteration, in order
  std::vector<bool> proxied;         ///< per task: communication replayed by a stand-in
  std::string proxy_note;            ///< what the stand-in was, when any task was proxied
  bool complete = true;              ///< false on MPI ranks other than 0 (they hold no gathered times)
};

/// @brief A way to run a replay plan for real.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  /// Runs the graph `options.warmup_iterations + options.iterations` times.
  /// Runtime Error when the hardware or a library fails; input Error when the
  /// graph needs what this backend cannot do (naming the task).
  virtual MeasuredRun run(const dag::TaskGraph& graph, const ReplayPlan& plan, const ExecuteOptions& options) = 0;
};

/// "host" (always built) or "cuda" (the CUDA plug-in, loaded now: its errors
/// when it is not installed or does not load, hostrt/cuda_plugin.hpp); any
/// other name is an input Error on field request.backend.
std::unique_ptr<Backend> make_backend(const std::string& name);

}  // namespace moeplan::exec
