#pragma once
// Seeded synthetic task graphs for property tests and the engine benchmark.
// The same logical graph can be emitted for one representative rank or for
// many identical ranks (compute replicated per rank, communication as
// collectives over every rank), so the two modes can be compared.

#include <cstdint>

#include <moeplan/dag/task_graph.hpp>

namespace moeplan::sim {

/// @brief Shape of a random DAG.
struct RandomDagOptions {
  std::uint32_t seed = 1;
  std::size_t logical_tasks = 100;
  std::int32_t ranks = 1;
  double comm_fraction = 0.4;  ///< share of logical tasks that are collectives
  std::int32_t max_dependencies = 3;
  std::int32_t window = 16;    ///< dependencies reach at most this many logical tasks back
  bool priority_comm = false;  ///< the comm stream is a Priority pool instead of InOrder
  double min_duration_ms = 0.1;
  double max_duration_ms = 2.0;
  /// > 0: collective i is a transfer on Shared links instead of the comm
  /// streams: on link i mod k, and every other one also on the next link (it
  /// crosses two), with 10% of its duration as latency and a size that, alone,
  /// streams at `transfer_share` of the link's capacity. It is issued on
  /// in-order stream i mod transfer_streams of rank 0 (as NCCL kernels on
  /// several CUDA streams), so at most that many transfers share at once: a
  /// random DAG has many roots, which would otherwise all start at time 0.
  std::int32_t shared_links = 0;
  double link_capacity = 1000;  ///< units per ms of each shared link
  double transfer_share = 0.5;  ///< a lone transfer's rate over the link's capacity (<= 1)
  std::int32_t transfer_streams = 4;
};

/// Per rank: a "compute" (InOrder) and a "comm" stream. Logical task i runs on
/// compute (one task per rank) or is a collective over every rank's comm stream.
dag::TaskGraph random_dag(const RandomDagOptions& options);

/// The task id, in random_dag(options) built for `options.ranks` ranks, of
/// logical task `logical` on rank 0.
dag::TaskId random_dag_rank0_task(const RandomDagOptions& options, std::size_t logical);

/// @brief A layered pipeline: per rank, layer and micro-batch, compute A ->
/// collective X over a group -> compute B -> collective Y (group = `group_size`
/// consecutive ranks), micro-batches in order on each stream.
struct PipelineDagOptions {
  std::int32_t ranks = 8;
  std::int32_t layers = 8;
  std::int32_t micro_batches = 8;
  std::int32_t group_size = 8;
  double compute_ms = 1.0;
  double collective_ms = 0.8;
};
dag::TaskGraph pipeline_dag(const PipelineDagOptions& options);

}  // namespace moeplan::sim
