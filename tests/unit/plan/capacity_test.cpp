#include <catch2/catch.hpp>

#include <set>
#include <tuple>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/mapping_pricing.hpp>
#include <moeplan/plan/mapping_search.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/plan/capacity.hpp>
#include <moeplan/plan/joint.hpp>
#include <moeplan/output/capacity_report.hpp>

#include "folding_toy.hpp"

using namespace moeplan;

namespace {

// The toy (folding_toy.hpp) as a capacity question: its model, its 2-GPU node, its profile.
plan::CapacityRequest toy_request() {
  const model::ScenarioSpec s = moeplan::testing::toy_scenario_for_overlap();
  plan::CapacityRequest r;
  r.model = s.model;
  r.cluster = s.cluster;
  r.profile = *s.profile;
  r.seq_len = 8;
  r.global_batch = 1;
  return r;
}

plan::CapacityRow row_with(std::int64_t gpus, double tokens_per_s) {
  plan::CapacityRow row;
  row.gpus = gpus;
  row.plan = plan::CapacityPlan{};
  row.tokens_per_s = tokens_per_s;
  return row;
}

}  // namespace

TEST_CASE("plan::capacity_gpu_counts (by hand)", "[plan][capacity]") {
  // Node size 8 times a power of two: 8, 16, ..., 4096; those in the range.
  CHECK(plan::capacity_gpu_counts(64, 4096, 8) == std::vector<std::int64_t>{64, 128, 256, 512, 1024, 2048, 4096});
  CHECK(plan::capacity_gpu_counts(100, 1000, 8) == std::vector<std::int64_t>{128, 256, 512});
  CHECK(plan::capacity_gpu_counts(1, 8, 8) == std::vector<std::int64_t>{8});
  const auto [field, reason] = testing::error_of([] { plan::capacity_gpu_counts(9, 15, 8); });
  CHECK(field == "request.gpus");  // the CLI names it --gpus, the Python module gpus=
  CHECK_THAT(reason, Catch::StartsWith("9..15 holds no count of whole 8-GPU nodes"));
}

TEST_CASE("plan::fill_budget: days, GPU-hours, cost and the deadline (by hand)", "[plan][capacity]") {
  plan::CapacityRequest r = toy_request();
  r.tokens = 2e12;
  r.days = 30;
  r.cost_per_gpu_hour = 2.5;
  // 2e12 tokens at 1e6 tokens/s: 2e6 s = 2e6 / 86,400 = 23.148 days; on 64
  // GPUs 64 x 2e6 / 3,600 = 35,555.6 GPU-hours, at 2.5 each 88,888.9.
  plan::CapacityRow row = row_with(64, 1e6);
  plan::fill_budget(r, row);
  CHECK(*row.days == Approx(2e6 / 86400.0));
  CHECK(*row.gpu_hours == Approx(35555.5556));
  CHECK(*row.cost == Approx(88888.889));
  CHECK(*row.meets_deadline);
  r.days = 20;  // 23.1 days is late
  plan::fill_budget(r, row);
  CHECK_FALSE(*row.meets_deadline);
  SECTION("without a price no cost; without a deadline no verdict; a row without a plan misses the deadline") {
    plan::CapacityRequest bare = toy_request();
    bare.tokens = 2e12;
    plan::CapacityRow b = row_with(64, 1e6);
    plan::fill_budget(bare, b);
    CHECK(b.days);
    CHECK_FALSE(b.cost);
    CHECK_FALSE(b.meets_deadline);
    bare.days = 30;
    plan::CapacityRow none;
    none.gpus = 8;
    plan::fill_budget(bare, none);
    CHECK_FALSE(none.days);
    CHECK_FALSE(*none.meets_deadline);
  }
  SECTION("options that cannot act are refused, naming them") {
    plan::CapacityRequest q = toy_request();
    q.gpus = {2};
    q.days = 30;
    CHECK(testing::error_of([&] { plan::check_capacity_request(q); }).first == "request.days");
    q.days.reset();
    q.cost_per_gpu_hour = 1;
    CHECK(testing::error_of([&] { plan::check_capacity_request(q); }).first == "request.cost_per_gpu_hour");
  }
  SECTION("a profile faster than the GPU's peak for the model's datatype is another datatype's") {
    // The toy's GEMM line: 1e-3 ms per FLOP, 1e6 FLOP/s. Its GPU (for overlap
    // tests) has a 2e6 FLOP/s half-precision peak: the 2-byte model is fine.
    plan::CapacityRequest q = toy_request();
    CHECK_NOTHROW(plan::check_capacity_request(q));
    // A 4-byte model on a GPU whose fp32 peak is 5e5 FLOP/s: the line is 2x too fast.
    q.model.dtype_bytes = 4;
    q.cluster.gpu.peak_flops_per_s_fp32 = 5e5;
    const auto [field, reason] = testing::error_of([&] { plan::check_capacity_request(q); });
    CHECK(field == "request.profile");
    CHECK_THAT(reason, Catch::StartsWith("toy prices GEMMs at"));
    q.cluster.gpu.peak_flops_per_s_fp32 = 1e6;  // exactly the line's rate: a line may reach the peak
    CHECK_NOTHROW(plan::check_capacity_request(q));
  }
}

TEST_CASE("plan::capacity_summary marks the smallest count in time and the cheapest (by hand)", "[plan][capacity]") {
  // 1e12 tokens, deadline 50 days. Tokens/s and days = 1e12 / tps / 86,400,
  // tokens per GPU-second = tps / gpus:
  //   64:  1.0e5 -> 115.7 days, 1562.5      128: 2.1e5 -> 55.1 days, 1640.6
  //   256: 3.9e5 ->  29.7 days, 1523.4      512: 7.0e5 -> 16.5 days, 1367.2
  // In time: 256 and 512; the smallest is 256, and of those two 256 costs least.
  // With no deadline the cheapest is 128; a count with no plan is passed over.
  plan::CapacityRequest r = toy_request();
  r.tokens = 1e12;
  r.days = 50;
  std::vector<plan::CapacityRow> rows = {row_with(64, 1e5), row_with(128, 2.1e5), row_with(256, 3.9e5),
                                         row_with(512, 7e5)};
  plan::CapacityRow none;
  none.gpus = 1024;
  rows.push_back(none);
  for (plan::CapacityRow& row : rows) plan::fill_budget(r, row);
  const plan::CapacityResult marked = plan::capacity_summary(r, rows);
  CHECK(marked.smallest_gpus == 256);
  CHECK(marked.cost_optimal_gpus == 256);
  r.days.reset();
  for (plan::CapacityRow& row : rows) row.meets_deadline.reset();
  const plan::CapacityResult free = plan::capacity_summary(r, rows);
  CHECK_FALSE(free.smallest_gpus);
  CHECK(free.cost_optimal_gpus == 128);
}

TEST_CASE("plan::capacity_row on the toy: the joint search's plan, days from its tokens/s, the binding bound",
          "[plan][capacity]") {
  plan::CapacityRequest r = toy_request();
  r.tokens = 1e9;
  r.days = 1;
  SECTION("two GPUs: a plan, and days = tokens / (8 tokens per iteration / iteration) / 86,400") {
    const plan::CapacityRow row = plan::capacity_row(r, 2);
    REQUIRE(row.plan);
    // The toy's best with no overlap is 4.836 ms (folding_test.cpp) and its
    // ends 1.216 (folding_toy.hpp): overlap may only improve it.
    CHECK(row.plan->iteration_ms <= 4.836 + moeplan::testing::toy_ends_ms(8, 2) + 1e-9);
    CHECK(row.plan->no_overlap_ms >= row.plan->iteration_ms);
    const double tokens_per_s = 8.0 / (row.plan->iteration_ms / 1000.0);
    CHECK(*row.tokens_per_s == Approx(tokens_per_s).epsilon(1e-12));
    CHECK(*row.days == Approx(1e9 / tokens_per_s / 86400.0).epsilon(1e-12));
    CHECK(*row.meets_deadline == (*row.days <= 1.0));
    CHECK(row.bound_by != "memory");  // the toy GPU holds 1e12 bytes
  }
  SECTION("a GPU too small for any mapping: no plan, bound by memory, the deadline missed") {
    r.cluster.gpu.memory_bytes = 100;
    const plan::CapacityRow row = plan::capacity_row(r, 2);
    CHECK_FALSE(row.plan);
    CHECK(row.bound_by == "memory");
    CHECK(row.mappings > 0);
    CHECK(row.fitting == 0);
    CHECK_FALSE(*row.meets_deadline);
  }
  SECTION("64 GPUs: no mapping splits one sequence of one layer that far: divisibility") {
    // One layer (pp 1), one sequence (dp 1), tp at most the 2-GPU node, cp at
    // most 16: at most 32 GPUs.
    const plan::CapacityRow row = plan::capacity_row(r, 64);
    CHECK_FALSE(row.plan);
    CHECK(row.mappings == 0);
    CHECK(row.bound_by == "divisibility");
  }
}

TEST_CASE("output::capacity_row_to_json and back: the row MPI rank 0 receives is the row sent", "[plan][capacity]") {
  plan::CapacityRow row = row_with(256, 1.0 / 3.0);
  row.plan->mapping = {2, 4, 8, 2, 8, 1, 1, 4, 16};
  row.plan->overlap = "fsmoe/fsmoe";
  row.plan->degree_forward = 4;
  row.plan->degree_backward = 2;
  row.plan->iteration_ms = 1234.5678901234567;
  row.plan->no_overlap_ms = 0.1 + 0.2;
  row.plan->mfu = 0.4321;
  row.plan->memory_bytes_per_gpu = 7.0e10 / 3;
  row.days = 2.0 / 7;
  row.gpu_hours = 1e5 / 3;
  row.meets_deadline = true;
  row.bound_by = "global batch";
  row.bound_detail = "because, \"quoted\"";
  row.mappings = 11;
  row.fitting = 7;
  row.evaluated = 5;
  row.configurations = 13;
  const io::Json sent = output::capacity_row_to_json(row);
  const plan::CapacityRow got = output::capacity_row_from_json(io::Json::parse(sent.dump(-1)));
  CHECK(output::capacity_row_to_json(got).dump() == sent.dump());
  CHECK(got.plan->iteration_ms == row.plan->iteration_ms);  // doubles exactly, shortest round-trip
  CHECK(got.plan->no_overlap_ms == row.plan->no_overlap_ms);
  CHECK(*got.tokens_per_s == 1.0 / 3.0);
  CHECK_FALSE(got.cost);
  CHECK(got.plan->mapping.edp == 16);
  CHECK_THROWS_AS(output::capacity_row_from_json(io::Json::parse("{\"gpus\": 8}")), Error);
}

TEST_CASE("plan::capacity_row prices each distinct mapping once, its batch check included", "[plan][capacity]") {
  // The row's joint search tries every folded mapping of the toy's 2 GPUs
  // (counted apart, as a set of the enumeration's configurations); its batch
  // check reruns the best mapping's prices at twice the batch, pricing nothing.
  const plan::CapacityRequest r = toy_request();
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>>
      distinct;
  for (const cost::MappingConfig& c : plan::enumerate_mappings(plan::capacity_scenario(r, 2), "folded"))
    distinct.insert({c.tp, c.cp, c.pp, c.vpp, c.ep, c.etp, c.micro_batch});
  // By hand: pp = vpp = 1 (one layer); tp, cp, ep, etp each 1 or 2 with
  // tp x cp and ep x etp dividing 2: 3 attention x 3 MoE shapes, each at
  // micro-batch 1, 2 and 4 (whether one is valid for one sequence is
  // price_layers' to say, and it prices the invalid ones too): 27.
  CHECK(distinct.size() == 27);
  const std::uint64_t before = cost::layer_pricings();
  const plan::CapacityRow row = plan::capacity_row(r, 2);
  CHECK(cost::layer_pricings() - before == distinct.size());
  REQUIRE(row.plan);
}

TEST_CASE("plan::capacity_row with a probe cache: the rows of a fresh search", "[plan][capacity]") {
  // The toy at 2, 4 and 8 GPUs (1, 2 and 4 of its 2-GPU nodes): each row once
  // with a search of its own, once through a cache the rows share (later rows
  // take the probes of the earlier ones' shapes from it).
  const plan::CapacityRequest r = toy_request();
  plan::ProbeCache probes;
  for (std::int64_t gpus : {2, 4, 8}) {
    INFO(gpus << " GPUs");
    const std::string fresh = output::capacity_row_to_json(plan::capacity_row(r, gpus)).dump(-1);
    const std::string shared = output::capacity_row_to_json(plan::capacity_row(r, gpus, &probes)).dump(-1);
    CHECK(shared == fresh);
  }
  CHECK_FALSE(probes.shapes.empty());
  SECTION("a cache filled for another model is refused") {
    plan::CapacityRequest other = r;
    other.model.name = "another toy";
    CHECK_THROWS_AS(plan::capacity_row(other, 2, &probes), Error);
  }
}
