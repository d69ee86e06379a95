// The GPU-free part of the CUDA calibration: its grids and nccl-tests'
// bus-bandwidth factors, built on every machine so that CI tests them.

#include <moeplan/calibrate/cuda_calibration.hpp>

#include <utility>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::calibrate {

double bus_bandwidth_factor(model::OpClass op, int ranks) {
  MOEPLAN_CHECK(ranks >= 1, "bus_bandwidth_factor: ranks >= 1");
  const double n = ranks;
  switch (op) {
    case model::OpClass::AllReduce:
      return 2.0 * (n - 1) / n;
    case model::OpClass::AllGather:
    case model::OpClass::ReduceScatter:
    case model::OpClass::A2A:
      return (n - 1) / n;
    case model::OpClass::P2P:
      return ranks == 1 ? 0.0 : 1.0;
    default:
      throw Error(ErrorKind::Runtime,
                  fmt::format("bus_bandwidth_factor: {} is not communication", model::to_string(op)));
  }
}

std::vector<GemmShape> cuda_gemm_grid(bool quick) {
  // (d_model, expert ffn hidden) of models/*.textproto.
  using Pair = std::pair<std::int64_t, std::int64_t>;
  const std::vector<Pair> pairs = quick ? std::vector<Pair>{{256, 512}, {1024, 2048}, {4096, 14336}}
                                        : std::vector<Pair>{{256, 512},   {512, 1024},  {768, 1536},  {1024, 2048},
                                                            {1600, 6400}, {3584, 2560}, {4096, 14336}};
  const std::vector<std::int64_t> tokens =
      quick ? std::vector<std::int64_t>{256, 2048, 16384} : std::vector<std::int64_t>{16, 64, 256, 1024, 4096, 16384};
  std::vector<GemmShape> grid;
  for (std::int64_t t : tokens)
    for (const auto& [d, f] : pairs) grid.push_back({t, d, f});
  return grid;
}

std::vector<GroupedGemmShape> cuda_grouped_grid(bool quick) {
  struct Experts {
    int count;
    std::int64_t d_model, ffn;
    std::vector<std::int64_t> tokens;
  };
  const std::vector<Experts> sets =
      quick ? std::vector<Experts>{{8, 1024, 2048, {256, 2048}}}
            : std::vector<Experts>{{4, 4096, 14336, {512, 2048, 8192}},
                                   {32, 7168, 2048, {128, 512, 2048}},
                                   {64, 2048, 1408, {128, 512, 2048}}};
  std::vector<GroupedGemmShape> grid;
  for (const Experts& e : sets)
    for (std::int64_t t : e.tokens) grid.push_back({e.count, {t, e.d_model, e.ffn}});
  return grid;
}

std::vector<std::size_t> cuda_cast_elements(bool quick) {
  if (quick) return {std::size_t{1} << 20, std::size_t{1} << 24};
  std::vector<std::size_t> sizes;
  for (int shift = 16; shift <= 28; shift += 2) sizes.push_back(std::size_t{1} << shift);
  return sizes;
}

std::vector<AttentionShape> cuda_attention_grid(bool quick) {
  const std::vector<std::int64_t> seq =
      quick ? std::vector<std::int64_t>{1024, 4096} : std::vector<std::int64_t>{512, 1024, 2048, 4096, 8192, 16384};
  // Up to 16384, the longest context of the bundled GPU scenarios (gpt-moe-s):
  // fitted up to 8192 only, the H100's attention at 16384 ran 18% slower than
  // the fit's extrapolation (docs/validation.md, "GPU runs").
  // Two head sizes in both grids: the attention shape model's matmul and
  // score terms are told apart by them (cost/attention_shape.hpp), and its fit needs 4 points.
  const std::vector<std::int64_t> head_dim{64, 128};
  std::vector<AttentionShape> grid;
  for (std::int64_t l : seq)
    for (std::int64_t k : head_dim) grid.push_back({l, 16, k});
  return grid;
}

}  // namespace moeplan::calibrate
