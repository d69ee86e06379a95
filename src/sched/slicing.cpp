#include <moeplan/sched/slicing.hpp>

#include <cmath>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/workload_sizing.hpp>

namespace moeplan::sched {

std::vector<std::int64_t> token_uniform_slicing(std::int64_t L, std::int64_t d) {
  MOEPLAN_CHECK(d >= 1 && d <= L, "degree must be in 1..L");
  std::vector<std::int64_t> slices(static_cast<std::size_t>(d), L / d);
  for (std::int64_t i = 0; i < L % d; ++i) ++slices[static_cast<std::size_t>(i)];
  return slices;
}

std::vector<std::int64_t> time_uniform_slicing(const model::ModelSpec& m, std::int64_t L, std::int64_t d) {
  MOEPLAN_CHECK(d >= 1 && d <= L, "degree must be in 1..L");
  auto flops = [&](std::int64_t l, std::int64_t c) {
    return cost::attention_flops(m, static_cast<double>(l), static_cast<double>(c));
  };
  const double t_hat = cost::causal_attention_flops(m, static_cast<double>(L)) / static_cast<double>(d);
  const std::int64_t first = (L + d - 1) / d;  // ceil(L / d): the quick start
  std::vector<std::int64_t> slices{first};
  std::int64_t start = first;
  for (std::int64_t j = 2; j < d; ++j) {      // slices 2 .. d-1; slice d takes the rest
    const std::int64_t latest = L - (d - j);  // leave a token for each later slice
    std::int64_t earliest = std::max(start + 1, j * first);
    if (earliest > latest) earliest = std::max(start + 1, (j * L + d - 1) / d);
    // FLOPs(i - start, i) grows with i, so the closest end is where it crosses
    // t_hat: scan up to the crossing (each scan begins where the last slice ended: O(L)).
    std::int64_t end = earliest;
    double best = std::abs(flops(end - start, end) - t_hat);
    for (std::int64_t i = earliest + 1; i <= latest; ++i) {
      const double gap = std::abs(flops(i - start, i) - t_hat);
      if (gap >= best) break;
      best = gap;
      end = i;
    }
    slices.push_back(end - start);
    start = end;
  }
  if (d > 1) slices.push_back(L - start);
  return slices;
}

std::vector<std::size_t> buffer_ready_after(const std::vector<std::int64_t>& attention,
                                            const std::vector<std::int64_t>& moe) {
  std::vector<std::size_t> ready;
  std::int64_t produced = 0;  // tokens attention has put into the buffer
  std::int64_t needed = 0;    // tokens the next MoE micro-batch needs in total
  std::size_t slice = 0;
  for (std::int64_t batch : moe) {
    needed += batch;
    while (produced < needed) {
      MOEPLAN_CHECK(slice < attention.size(), "attention slices hold fewer tokens than the MoE micro-batches");
      produced += attention[slice++];
    }
    ready.push_back(slice - 1);
  }
  return ready;
}

std::vector<std::pair<std::size_t, std::size_t>> moe_batches_of_slices(const std::vector<std::int64_t>& attention,
                                                                       const std::vector<std::int64_t>& moe) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::int64_t slice_start = 0;
  for (std::int64_t tokens : attention) {
    const std::int64_t slice_end = slice_start + tokens;  // [slice_start, slice_end)
    std::size_t first = 0, last = 0;
    bool found = false;
    std::int64_t batch_start = 0;
    for (std::size_t j = 0; j < moe.size(); ++j) {
      const std::int64_t batch_end = batch_start + moe[j];
      if (batch_start < slice_end && batch_end > slice_start) {
        if (!found) first = j;
        last = j;
        found = true;
      }
      batch_start = batch_end;
    }
    MOEPLAN_CHECK(found, "an attention slice overlaps no MoE micro-batch");
    out.emplace_back(first, last);
    slice_start = slice_end;
  }
  return out;
}

}  // namespace moeplan::sched
