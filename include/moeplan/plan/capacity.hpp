#pragma once
// The capacity question (issue 17 item 4): how many GPUs of a cluster kind
// train a model on a token budget by a deadline, and at what cost. For each
// GPU count the joint search (joint.hpp) finds the best mapping and overlap
// schedule; its tokens per second give days to train, GPU-hours and cost.
// A plain C++ API returning structs (the CLI prints them through
// report/capacity_report.hpp; a Python binding would call the same).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <moeplan/core/progress.hpp>
#include <moeplan/model/specs.hpp>
#include <moeplan/cost/mapping.hpp>

namespace moeplan::plan {

struct ProbeCache;  // joint.hpp


/// Default sequence length: the folding paper's 4K runs (moe-parallel-folding.md section 4.1).
inline constexpr std::int64_t kCapacitySeqLen = 4096;
/// Default global batch, sequences: 1,024 x 4,096 = 4M tokens per iteration,
/// Llama 2's batch (Touvron et al. 2023, section 2.2: "a global batch-size of 4M tokens").
inline constexpr std::int64_t kCapacityGlobalBatch = 1024;

/// @brief What the capacity question is asked with.
struct CapacityRequest {
  model::ModelSpec model;
  model::ClusterSpec cluster;  ///< the kind: node size, GPU, links (its num_nodes is set per count)
  model::CostProfileSpec profile;
  std::int64_t seq_len = kCapacitySeqLen;
  std::int64_t global_batch = kCapacityGlobalBatch;  ///< sequences per iteration
  model::RecomputeSpec recompute;
  /// Knobs each row's search opens (schedule.search): recompute by default;
  /// precision when asked (an FP8 recipe changes the training's numerics).
  std::vector<std::string> search{"recompute"};
  std::vector<std::int64_t> gpus;           ///< the counts, ascending
  std::optional<double> tokens;             ///< the token budget
  std::optional<double> days;               ///< the deadline (needs tokens)
  std::optional<double> cost_per_gpu_hour;  ///< the price (needs tokens)
  model::RunLimits limits;
  unsigned threads = 1;
  Progress* progress = nullptr;
};

/// @brief The capacity question as a person asks it (the CLI's options, the
/// Python module's arguments), quantities already read (io/quantity_text.hpp):
/// capacity_request loads the files it names.
struct CapacityQuery {
  std::string model;    ///< bundled name or path
  std::string cluster;  ///< bundled name or path
  std::string profile;  ///< empty: the cluster's <name>-datasheet
  std::optional<double> tokens;
  std::optional<double> days;
  std::optional<std::pair<std::int64_t, std::int64_t>> gpus;  ///< empty: one node to the cluster file's size
  std::optional<double> cost_per_gpu_hour;
  std::int64_t seq_len = kCapacitySeqLen;
  std::int64_t global_batch = kCapacityGlobalBatch;
  double max_memory_gib = 8;
  unsigned threads = 1;
  std::vector<std::string> search{"recompute"};  ///< precision, recompute (schedule.search); empty: neither
};

/// The request the query asks (files loaded, every option checked: input
/// Error naming the option as request.NAME).
CapacityRequest capacity_request(const CapacityQuery& query);

/// @brief The best plan of one GPU count.
struct CapacityPlan {
  cost::MappingConfig mapping;  ///< dp and edp included
  std::string overlap;    ///< "none" or "family/schedule"
  std::int64_t degree_forward = 0, degree_backward = 0;  ///< the schedule's (FoldMoE d, FlowMoE R, FSMoE r); 0: none
  double iteration_ms = 0;
  double no_overlap_ms = 0;  ///< the same mapping with no overlap
  double mfu = 0;
  double memory_bytes_per_gpu = 0;
  /// Fits by less than the memory model's largest under-prediction of a
  /// measured peak (cost::tight_in_memory): the plan may not fit.
  bool memory_tight = false;
  std::string precision = "bf16";  ///< workload.precision's name, as priced
  std::string recompute = "none";  ///< the recomputation's short form (model/recompute.hpp)
};

/// @brief One GPU count's answer.
struct CapacityRow {
  std::int64_t gpus = 0;
  std::optional<CapacityPlan> plan;  ///< empty: no mapping is valid, or none fits
  std::optional<double> tokens_per_s;
  std::optional<double> days;       ///< tokens / tokens_per_s / 86,400 (with tokens)
  std::optional<double> gpu_hours;  ///< gpus x tokens / tokens_per_s / 3,600 (with tokens)
  std::optional<double> cost;       ///< gpu_hours x cost_per_gpu_hour (with both)
  std::optional<bool> meets_deadline;  ///< days <= the deadline (with days)
  /// What bound the row: "memory" (a mapping that does not fit is faster, or
  /// none fits), "global batch" (twice the batch would make the same plan's
  /// tokens cheaper), "divisibility" (no mapping is valid), or "none".
  std::string bound_by = "none";
  std::string bound_detail;
  std::size_t mappings = 0;        ///< valid mappings
  std::size_t fitting = 0;         ///< of them, those that fit
  std::size_t evaluated = 0;       ///< of those, evaluated with every schedule
  std::size_t configurations = 0;  ///< mappings x schedules priced on the engine
};

/// @brief The table, and the counts it marks.
struct CapacityResult {
  std::vector<CapacityRow> rows;
  std::optional<std::int64_t> smallest_gpus;      ///< the smallest count that meets the deadline (with days)
  std::optional<std::int64_t> cost_optimal_gpus;  ///< the fewest GPU-hours per token (among those that meet the deadline)
};

/// The counts of [lo, hi] that are the node size times a power of two. Input
/// Error (field request.gpus) when there is none.
std::vector<std::int64_t> capacity_gpu_counts(std::int64_t lo, std::int64_t hi, std::int64_t gpus_per_node);

/// The folding scenario of one count: the request's model, cluster (num_nodes
/// = gpus / node size), profile, sequence and batch, micro-batch 1.
model::ScenarioSpec capacity_scenario(const CapacityRequest& request, std::int64_t gpus);

/// One count's row: the joint search (its best plan only is exact), then days,
/// GPU-hours, cost and the bound. Input Error when the request's options
/// contradict (days or a price without tokens). `probes`, when given, keeps
/// the search's overlap probes for the request's other rows (ProbeCache: one
/// per request, not shared by rows running at once); the row is the same
/// with or without it.
CapacityRow capacity_row(const CapacityRequest& request, std::int64_t gpus, ProbeCache* probes = nullptr);

/// A row's days, GPU-hours, cost and meets_deadline from its gpus and
/// tokens_per_s and the request's tokens, price and deadline (each left empty
/// where the request does not give what it needs).
void fill_budget(const CapacityRequest& request, CapacityRow& row);

/// The table of `rows` (one per count, ascending), with its marks.
CapacityResult capacity_summary(const CapacityRequest& request, std::vector<CapacityRow> rows);

/// Every count's row and the marks.
CapacityResult capacity(const CapacityRequest& request);

/// Checks the request's options against each other (days and a price need
/// tokens; counts of whole nodes) and the profile against the model (its GEMM
/// line no faster than the GPU's peak for the model's datatype); Input Error
/// naming the option (field request.NAME).
void check_capacity_request(const CapacityRequest& request);

}  // namespace moeplan::plan
