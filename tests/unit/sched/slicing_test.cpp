#include <catch2/catch.hpp>

#include <numeric>
#include <random>

#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/sched/slicing.hpp>

using namespace moeplan;

namespace {

model::ModelSpec model_with(std::int64_t H, std::int64_t h) {
  model::ModelSpec m = io::load_model("gpt-moe-s");
  m.d_model = H;
  m.num_heads = h;
  m.num_kv_heads = h;
  m.head_dim = H / h;
  return m;
}

// max / min of Eq. 5 FLOPs over the slices between the first and the last.
double middle_spread(const model::ModelSpec& m, const std::vector<std::int64_t>& slices) {
  std::vector<double> flops;
  std::int64_t context = 0;
  for (std::int64_t l : slices) {
    context += l;
    flops.push_back(cost::attention_flops(m, static_cast<double>(l), static_cast<double>(context)));
  }
  const auto first = flops.begin() + 1, last = flops.end() - 1;
  return *std::max_element(first, last) / *std::min_element(first, last);
}

}  // namespace

TEST_CASE("sched::buffer_ready_after reproduces FoldMoE's 8-token example", "[sched]") {
  // foldmoe.md section 4.2: X sliced into X1:6 and X7:8; MoE micro-batches of 4.
  // Z1:6 arrives: Z1:4 is emitted (ready after slice 0), Z5:6 kept; Z7:8 completes Z5:8.
  const std::vector<std::int64_t> attention{6, 2}, moe{4, 4};
  CHECK(sched::buffer_ready_after(attention, moe) == std::vector<std::size_t>{0, 1});
  // Backward: slice 0 (tokens 1-6) holds tokens of both micro-batches, slice 1 only of the second.
  const auto covering = sched::moe_batches_of_slices(attention, moe);
  CHECK(covering[0] == std::pair<std::size_t, std::size_t>{0, 1});
  CHECK(covering[1] == std::pair<std::size_t, std::size_t>{1, 1});
}

TEST_CASE("sched::token_uniform_slicing spreads the remainder over the first slices", "[sched]") {
  CHECK(sched::token_uniform_slicing(10, 4) == std::vector<std::int64_t>{3, 3, 2, 2});
  CHECK(sched::token_uniform_slicing(8, 1) == std::vector<std::int64_t>{8});
}

TEST_CASE("sched::time_uniform_slicing keeps Algorithm 1's guarantees", "[sched][property]") {
  std::mt19937 rng(11);
  const std::int64_t widths[] = {256, 512, 768, 1024, 1600, 4096, 8192};
  const std::int64_t heads[] = {4, 8, 16, 25, 32, 64};
  for (int trial = 0; trial < 400; ++trial) {
    const std::int64_t d = std::uniform_int_distribution<std::int64_t>(1, 32)(rng);
    const std::int64_t L = std::uniform_int_distribution<std::int64_t>(d, 40000)(rng);
    const model::ModelSpec m = model_with(widths[trial % 7], heads[trial % 6]);
    const std::vector<std::int64_t> s = sched::time_uniform_slicing(m, L, d);
    INFO("L " << L << " d " << d);
    REQUIRE(static_cast<std::int64_t>(s.size()) == d);
    CHECK(std::accumulate(s.begin(), s.end(), std::int64_t{0}) == L);
    CHECK(s.front() == (L + d - 1) / d);  // quick start: ceil(L / d)
    std::int64_t prefix = 0;
    bool prefix_ok = true, positive = true;
    for (std::int64_t j = 1; j <= d; ++j) {
      prefix += s[static_cast<std::size_t>(j - 1)];
      prefix_ok = prefix_ok && prefix * d >= j * L;  // sum_{i<=j} l_i >= j L / d
      positive = positive && s[static_cast<std::size_t>(j - 1)] >= 1;
    }
    CHECK(prefix_ok);
    CHECK(positive);
  }
}

TEST_CASE("sched::time_uniform_slicing evens out attention FLOPs over the middle slices", "[sched][property]") {
  // Where attention is attention-dominated (L >= 2H: the lc term outweighs 8H^2 l)
  // and slices hold >= 64 tokens, the middle slices' FLOPs spread less than
  // token-uniform slicing's. With d <= 4 the prefix constraint pins the middle
  // slices to the token-uniform bound, so the spreads are equal there.
  std::mt19937 rng(5);
  const std::int64_t widths[] = {256, 512, 768, 1024, 1600, 2048, 4096, 6144, 8192};
  const std::int64_t heads[] = {4, 8, 16, 25, 32, 64};
  int checked = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    const std::int64_t d = std::uniform_int_distribution<std::int64_t>(5, 32)(rng);
    const std::int64_t H = widths[std::uniform_int_distribution<int>(0, 8)(rng)];
    const std::int64_t lowest = std::max(64 * d, 2 * H);
    const std::int64_t L = std::uniform_int_distribution<std::int64_t>(lowest, 32768)(rng);
    const model::ModelSpec m = model_with(H, heads[std::uniform_int_distribution<int>(0, 5)(rng)]);
    INFO("L " << L << " d " << d << " H " << H);
    CHECK(middle_spread(m, sched::time_uniform_slicing(m, L, d)) <
          middle_spread(m, sched::token_uniform_slicing(L, d)));
    ++checked;
  }
  CHECK(checked == 1000);
}
