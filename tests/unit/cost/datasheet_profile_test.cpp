#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/bus_factor.hpp>
#include <moeplan/cost/cost_model.hpp>
#include <moeplan/cost/datasheet_profile.hpp>
#include <moeplan/io/loader.hpp>

using namespace moeplan;

TEST_CASE("cost::datasheet_profile derives lines from the cluster's datasheet", "[cost]") {
  const model::ClusterSpec dgx = io::load_cluster("dgx-h100");
  const model::CostProfileSpec p = cost::datasheet_profile(dgx, "x", {});
  const cost::CostModel costs(p);
  // GEMM at 989.5 TFLOP/s x the cluster file's measured 0.77 (gpu.gemm_efficiency): 1e12 FLOPs take
  // 1e3 / (989.5e12 x 0.77) x 1e12 ms + 0.01 ms startup; FP8 at 1979 x 0.77.
  REQUIRE(dgx.gpu.gemm_efficiency == 0.77);
  CHECK(costs.compute(model::OpClass::Gemm, 1e12).value == Approx(0.01 + 1e3 / (989.5 * 0.77)));
  CHECK(costs.compute(model::OpClass::GemmFp8, 1e12).value == Approx(0.01 + 1e3 / (1979 * 0.77)));
  REQUIRE(p.gemm_shape);
  CHECK(p.gemm_shape->efficiency == 0.77);
  // Without it, the generic 0.6; the fp32 CUDA-core GEMMs keep 0.6 either way (67 TFLOP/s).
  model::ClusterSpec generic = dgx;
  generic.gpu.gemm_efficiency.reset();
  CHECK(cost::CostModel(cost::datasheet_profile(generic, "x", {})).compute(model::OpClass::Gemm, 1e12).value ==
        Approx(0.01 + 1e3 / (989.5 * 0.6)));
  cost::DatasheetAssumptions fp32;
  fp32.dtype = cost::ComputeDtype::Fp32;
  CHECK(cost::CostModel(cost::datasheet_profile(dgx, "x", fp32)).compute(model::OpClass::Gemm, 1e12).value ==
        Approx(0.01 + 1e3 / (67 * 0.6)));
  // Intra allreduce over 8 GPUs: busbw = 450 GB/s x 0.8 = 360 GB/s; factor 2 x 7/8.
  CHECK(costs.predict(model::OpClass::AllReduce, model::LinkClass::Intra, 8, 1e9).value ==
        Approx(0.015 + 1e9 * 1.75 / 360e9 * 1e3));
  // Inter ring collectives: the node's 8 NICs x 50 GB/s x 0.8 = 320 GB/s bus bandwidth.
  const std::int64_t g = dgx.world_size();  // 1024 GPUs on 128 nodes
  CHECK(costs.predict(model::OpClass::AllReduce, model::LinkClass::Inter, g, 1e9).value ==
        Approx(0.03 + 1e9 * cost::bus_factor(model::OpClass::AllReduce, g) / 320e9 * 1e3));
  // Inter AlltoAll: each GPU's 1/8 of the NICs carries the (g - 8) / g of its data bound off-node:
  // busbw = (g - 1) / (g - 8) x 320 / 8 GB/s.
  const double a2a_busbw = (1023.0 / 1016.0) * 320e9 / 8;
  CHECK(costs.predict(model::OpClass::A2A, model::LinkClass::Inter, g, 1e9).value ==
        Approx(0.03 + 1e9 * cost::bus_factor(model::OpClass::A2A, g) / a2a_busbw * 1e3));
}

TEST_CASE("cost::datasheet_profile prices an NVLink domain of 72 GPUs on NVLink, and its NICs together", "[cost]") {
  // Two GB200 NVL72 racks (36 trays of 4): NVLink 900 GB/s per direction, one 400 Gb/s NIC per GPU.
  model::ClusterSpec nvl = io::load_cluster("gb200-nvl72");
  nvl.num_nodes = 36;
  const model::CostProfileSpec p = cost::datasheet_profile(nvl, "x", {});
  const cost::CostModel costs(p);
  // Intra allreduce over the domain's 72 GPUs: busbw 900 GB/s x 0.8 = 720 GB/s, factor 2 x 71/72.
  CHECK(costs.predict(model::OpClass::AllReduce, model::LinkClass::Intra, 72, 1e9).value ==
        Approx(0.015 + 1e9 * (2.0 * 71 / 72) / 720e9 * 1e3));
  // Inter ring collectives over 144 GPUs: the domain's 72 NICs x 50 GB/s x 0.8 = 2.88 TB/s.
  CHECK(costs.predict(model::OpClass::AllReduce, model::LinkClass::Inter, 144, 1e9).value ==
        Approx(0.03 + 1e9 * (2.0 * 143 / 144) / 2.88e12 * 1e3));
  // Inter AlltoAll over 144: half of each GPU's data leaves the domain through its own NIC
  // (40 GB/s after efficiency): 0.5 / 40e9 s per byte = 1.25e-8 ms per byte.
  CHECK(costs.predict(model::OpClass::A2A, model::LinkClass::Inter, 144, 1e9).value == Approx(0.03 + 1e9 * 1.25e-8));
  // One rack (18 trays, 72 GPUs) is one domain: intra lines only.
  nvl.num_nodes = 18;
  for (const model::LinearCostSpec& line : cost::datasheet_profile(nvl, "x", {}).costs) {
    INFO(model::to_string(line.op) << " group " << line.group);
    CHECK(line.link != model::LinkClass::Inter);
  }
}

namespace {

using model::LinkClass;
using model::OpClass;

// A cluster file's datasheet numbers as written there (scenarios/clusters/*.textproto),
// and the precision its datasheet profile prices compute at (docs/cost-model.md
// "Datasheet assumptions": half-precision tensor peak, except fp32 for FlowMoE's
// clusters and FSMoE's testbeds).
struct Datasheet {
  const char* cluster;
  std::int64_t nodes, gpus_per_node;
  double peak_tflops;  // of the chosen precision
  bool half;
  double intra_gbit_s, inter_gbit_s;
  std::int64_t inter_ports_per_node;
  double fp8_tflops;           // dense FP8 tensor peak (0: none)
  double memory_gbytes_per_s;  // HBM bandwidth
  double gemm_efficiency;      // the cluster file's gpu.gemm_efficiency, else the generic 0.6
  // The cluster file's intra_collectives (NCCL on the intra link), else the
  // generic 0.8 of line rate, 0.015 ms startup and no per-step startup.
  double intra_efficiency = 0.8;
  double intra_fixed_ms = 0.015;
  double intra_step_ms = 0;
};

constexpr Datasheet kBundled[] = {
    {"dgx-h100", 128, 8, 989.5, true, 3600, 400, 8, 1979, 3350, 0.77},
    {"foldmoe-g5", 2, 8, 125, true, 252, 100, 1, 0, 600, 0.6},
    {"flowmoe-cluster1", 2, 8, 35.6, false, 126, 100, 1, 0, 936, 0.6},
    {"flowmoe-cluster2", 4, 2, 13.4, false, 126, 10, 1, 0, 616, 0.6},
    {"fsmoe-testbed-a", 6, 8, 38.7, false, 900, 200, 1, 0, 768, 0.6},
    {"fsmoe-testbed-b", 8, 4, 13.4, false, 126, 100, 1, 0, 616, 0.6},
    {"dgx-a100", 128, 8, 312, true, 2400, 200, 8, 0, 2039, 0.6},
    {"dgx-h200", 128, 8, 989.5, true, 3600, 400, 8, 1979, 4800, 0.77},
    // SimuMax's B200 NCCL fits, as the cluster file writes them: 0.673, 24.3 us + 8.6 us per ring step.
    {"dgx-b200", 128, 8, 2250, true, 7200, 400, 8, 4500, 8000, 0.49, 0.673, 0.0243, 0.0086},
};

struct ExpectedLine {
  OpClass op;
  LinkClass link;
  std::int64_t group;
  std::optional<std::int64_t> ranks_per_node;  // written on every communication line
  double alpha_ms, beta_ms;
  std::optional<model::AttentionPass> pass = std::nullopt;  // the fused attention lines'
  std::optional<std::int64_t> head_dim = std::nullopt;
  std::optional<std::string> kernel = std::nullopt;  // the fused loss's elementwise line
};

// The cluster files' fused attention rates (gpu.fused_attention: startup ms,
// efficiency), forward and backward, for any head dim and for MLA's 192:
// H100 and H200 from this project's H100 probe, B200 from SimuMax's sweep.
// The H100's also for head dim 64 (GPT-OSS), measured on the H100 alone.
struct FusedRates {
  double fwd_alpha, fwd_eff, bwd_alpha, bwd_eff, mla_fwd_alpha, mla_fwd_eff, mla_bwd_alpha, mla_bwd_eff;
  std::optional<std::array<double, 4>> d64 = std::nullopt;  // forward alpha, eff, backward alpha, eff
};
std::optional<FusedRates> fused_rates(const std::string& cluster) {
  if (cluster == "dgx-h100" || cluster == "dgx-h200")
    return FusedRates{0.069, 0.615, 0.226, 0.421, 0.071, 0.616, 0.252, 0.363, std::array{0.053, 0.462, 0.145, 0.347}};
  if (cluster == "dgx-b200") return FusedRates{0.066, 0.571, 0.046, 0.355, 0.017, 0.407, 0.030, 0.260};
  return std::nullopt;
}

// The datasheet arithmetic, one formula per line (docs/cost-model.md): compute
// beta = 1 / (peak x efficiency) in ms per FLOP, GEMM the GPU's (its cluster
// file's gpu.gemm_efficiency, else 0.6) and attention 0.4;
// links at 0.8 of line rate; intra lines over one node's n GPUs at one GPU port,
// times nccl-tests' bus factor ((n - 1) / n, allreduce 2 (n - 1) / n); inter
// ring collectives over all g GPUs at the node's NIC bandwidth (ports x port);
// an inter AlltoAll sends the (g - n) / g of a GPU's buffer bound off-node
// through its 1/n share of the NICs; a P2P pair gets one GPU port inside a node
// and one NIC port across nodes. Startups: compute 0.01, intra 0.015, inter 0.03 ms.
// FP8 GEMMs (half-precision profiles of GPUs with an FP8 peak) at the GEMM
// efficiency of the FP8 peak; memory-bound kernels at 0.5 of the HBM bandwidth, per byte.
std::vector<ExpectedLine> datasheet_lines(const Datasheet& d) {
  const double peak_flops_per_ms = d.peak_tflops * 1e12 / 1e3;
  const double intra_bytes_per_ms = d.intra_efficiency * d.intra_gbit_s * 1e9 / 8 / 1e3;
  const double port_bytes_per_ms = 0.8 * d.inter_gbit_s * 1e9 / 8 / 1e3;
  const double nic_bytes_per_ms = port_bytes_per_ms * static_cast<double>(d.inter_ports_per_node);
  const auto n = static_cast<double>(d.gpus_per_node);
  const double g = n * static_cast<double>(d.nodes);
  const std::int64_t world = d.gpus_per_node * d.nodes;
  std::vector<ExpectedLine> lines{
      {OpClass::Gemm, LinkClass::Local, 1, std::nullopt, 0.01, 1 / ((d.half ? d.gemm_efficiency : 0.6) * peak_flops_per_ms)},
      // Attention: half precision at the line fitted to SimuMax's B200
      // FlashAttention sweep (0.05 ms + FLOPs / (0.39 peak)); fp32 profiles
      // (the papers' own kernels) keep the generic 0.01 ms + FLOPs / (0.4 peak).
      {OpClass::Attention, LinkClass::Local, 1, std::nullopt, d.half ? 0.05 : 0.01,
       1 / ((d.half ? 0.39 : 0.4) * peak_flops_per_ms)},
      {OpClass::P2P, LinkClass::Intra, 2, 2, d.intra_fixed_ms + d.intra_step_ms, 1 / intra_bytes_per_ms},
      {OpClass::A2A, LinkClass::Inter, world, d.gpus_per_node, 0.03, (g - n) / g / (nic_bytes_per_ms / n)},
      {OpClass::AllGather, LinkClass::Inter, world, d.gpus_per_node, 0.03, (g - 1) / g / nic_bytes_per_ms},
      {OpClass::ReduceScatter, LinkClass::Inter, world, d.gpus_per_node, 0.03, (g - 1) / g / nic_bytes_per_ms},
      {OpClass::AllReduce, LinkClass::Inter, world, d.gpus_per_node, 0.03, 2 * (g - 1) / g / nic_bytes_per_ms},
      {OpClass::P2P, LinkClass::Inter, 2, 1, 0.03, 1 / port_bytes_per_ms},
      {OpClass::Elementwise, LinkClass::Local, 1, std::nullopt, 0.01, 1 / (0.5 * d.memory_gbytes_per_s * 1e9 / 1e3)},
  };
  // Intra collectives over k GPUs at startup fixed + step x (k - 1): one line
  // at the node, and at 2, 4, ... below it when the cluster gives a step.
  for (std::int64_t k = d.intra_step_ms > 0 ? 2 : d.gpus_per_node; k <= d.gpus_per_node; k *= 2) {
    const auto kd = static_cast<double>(k);
    const double alpha = d.intra_fixed_ms + d.intra_step_ms * (kd - 1);
    lines.push_back({OpClass::A2A, LinkClass::Intra, k, k, alpha, (kd - 1) / kd / intra_bytes_per_ms});
    lines.push_back({OpClass::AllGather, LinkClass::Intra, k, k, alpha, (kd - 1) / kd / intra_bytes_per_ms});
    lines.push_back({OpClass::ReduceScatter, LinkClass::Intra, k, k, alpha, (kd - 1) / kd / intra_bytes_per_ms});
    lines.push_back({OpClass::AllReduce, LinkClass::Intra, k, k, alpha, 2 * (kd - 1) / kd / intra_bytes_per_ms});
  }
  if (d.half && d.fp8_tflops > 0)
    lines.push_back(
        {OpClass::GemmFp8, LinkClass::Local, 1, std::nullopt, 0.01, 1 / (d.gemm_efficiency * d.fp8_tflops * 1e12 / 1e3)});
  // Fused attention (half precision): t = alpha + FLOPs / (efficiency x peak), one line per rate.
  if (const auto f = fused_rates(d.cluster); d.half && f) {
    using model::AttentionPass;
    const auto fused = [&](double alpha, double eff, AttentionPass pass, std::optional<std::int64_t> head_dim) {
      return ExpectedLine{OpClass::Attention, LinkClass::Local, 1, std::nullopt, alpha, 1 / (eff * peak_flops_per_ms),
                          pass, head_dim};
    };
    lines.push_back(fused(f->fwd_alpha, f->fwd_eff, AttentionPass::Forward, std::nullopt));
    lines.push_back(fused(f->bwd_alpha, f->bwd_eff, AttentionPass::Backward, std::nullopt));
    lines.push_back(fused(f->mla_fwd_alpha, f->mla_fwd_eff, AttentionPass::Forward, 192));
    lines.push_back(fused(f->mla_bwd_alpha, f->mla_bwd_eff, AttentionPass::Backward, 192));
    if (f->d64) {
      lines.push_back(fused((*f->d64)[0], (*f->d64)[1], AttentionPass::Forward, 64));
      lines.push_back(fused((*f->d64)[2], (*f->d64)[3], AttentionPass::Backward, 64));
    }
  }
  // Transformer Engine's fused loss (half precision): B200's 0.363 of its HBM
  // bandwidth (SimuMax's measurement, the cluster file's gpu.fused_cross_entropy_efficiency).
  if (d.half && std::string(d.cluster) == "dgx-b200")
    lines.push_back({OpClass::Elementwise, LinkClass::Local, 1, std::nullopt, 0.01,
                     1 / (0.363 * d.memory_gbytes_per_s * 1e9 / 1e3), std::nullopt, std::nullopt,
                     std::string(model::kFusedCrossEntropyKernel)});
  // Megatron-Core DDP's gradient buffer passes (any precision), the cluster
  // files' gpu.gradient_buffer_efficiency: 0.835 of the HBM bandwidth on the
  // H100 and H200 (this project's H200 probe), 0.666 on B200 (SimuMax's
  // memory-bound default); the other clusters have none.
  const std::string name(d.cluster);
  const double streaming = name == "dgx-b200" ? 0.666 : name == "dgx-h100" || name == "dgx-h200" ? 0.835 : 0.0;
  if (streaming > 0)
    lines.push_back({OpClass::Elementwise, LinkClass::Local, 1, std::nullopt, 0.01,
                     1 / (streaming * d.memory_gbytes_per_s * 1e9 / 1e3), std::nullopt, std::nullopt,
                     std::string(model::kGradientBufferKernel)});
  return lines;
}

// The expected line of (op, link) at its largest group.
ExpectedLine expected(const std::vector<ExpectedLine>& lines, OpClass op, LinkClass link) {
  const ExpectedLine* best = nullptr;
  for (const ExpectedLine& l : lines)
    if (l.op == op && l.link == link && (best == nullptr || l.group > best->group)) best = &l;
  MOEPLAN_CHECK(best != nullptr, "the table has the line");
  return *best;
}

const model::LinearCostSpec* find_line(const model::CostProfileSpec& p, OpClass op, LinkClass link,
                                       std::int64_t group, std::optional<model::AttentionPass> pass = std::nullopt,
                                       std::optional<std::int64_t> head_dim = std::nullopt,
                                       const std::optional<std::string>& kernel = std::nullopt) {
  for (const model::LinearCostSpec& c : p.costs)
    if (c.op == op && c.link == link && c.group == group && c.attention_pass == pass && c.head_dim == head_dim &&
        c.kernel == kernel)
      return &c;
  return nullptr;
}

void check_datasheet_lines(const model::CostProfileSpec& p, const Datasheet& d) {
  CHECK(p.cluster == d.cluster);
  const std::vector<ExpectedLine> want = datasheet_lines(d);
  CHECK(p.costs.size() == want.size());
  for (const ExpectedLine& w : want) {
    INFO(d.cluster << " " << model::to_string(w.op) << " " << model::to_string(w.link) << " group " << w.group);
    const model::LinearCostSpec* line = find_line(p, w.op, w.link, w.group, w.pass, w.head_dim, w.kernel);
    REQUIRE(line != nullptr);
    CHECK(line->group == w.group);
    CHECK(line->ranks_per_node == w.ranks_per_node);
    CHECK(line->concurrent_groups == 1);
    CHECK(line->provenance == model::Provenance::Datasheet);
    CHECK(line->alpha_ms == Approx(w.alpha_ms).epsilon(1e-12));
    CHECK(line->beta_ms_per_unit == Approx(w.beta_ms).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("the tables of datasheet numbers are the cluster files'", "[cost][zoo]") {
  for (const Datasheet& d : kBundled) {
    INFO(d.cluster);
    const model::ClusterSpec c = io::load_cluster(d.cluster);
    CHECK(c.num_nodes == d.nodes);
    CHECK(c.gpus_per_node == d.gpus_per_node);
    const double half = c.gpu.peak_flops_per_s_bf16 > 0 ? c.gpu.peak_flops_per_s_bf16 : c.gpu.peak_flops_per_s_fp16;
    CHECK((d.half ? half : c.gpu.peak_flops_per_s_fp32) == Approx(d.peak_tflops * 1e12).epsilon(1e-12));
    CHECK(c.intra_link.bandwidth_bytes_per_s == Approx(d.intra_gbit_s * 1e9 / 8).epsilon(1e-12));
    CHECK(c.inter_link.bandwidth_bytes_per_s == Approx(d.inter_gbit_s * 1e9 / 8).epsilon(1e-12));
    CHECK(c.inter_link.ports_per_node == d.inter_ports_per_node);
    CHECK(c.gpu.peak_flops_per_s_fp8 == Approx(d.fp8_tflops * 1e12).epsilon(1e-12));
    REQUIRE(c.gpu.memory_bytes_per_s);
    CHECK(*c.gpu.memory_bytes_per_s == Approx(d.memory_gbytes_per_s * 1e9).epsilon(1e-12));
  }
}

// Fails (demonstrated) when a bundled profile carries a beta of another rule,
// e.g. flowmoe-cluster2's inter P2P at a GPU's share of the NICs (2e-6 ms per
// byte) instead of one NIC port (1e-6), and when the generator changes a
// formula, e.g. the inter AlltoAll's bus bandwidth taken as (g - 1) / g instead
// of (g - 1) / (g - n) times a GPU's share of the NICs.
TEST_CASE("bundled datasheet profiles follow the datasheet arithmetic, line by line", "[cost][zoo]") {
  SECTION("every line of calibration/profiles/<cluster>-datasheet.textproto") {
    for (const Datasheet& d : kBundled)
      check_datasheet_lines(io::load_profile(std::string(d.cluster) + "-datasheet"), d);
  }
  SECTION("what `moeplan datasheet-profile` makes today, with the cluster's precision") {
    for (const Datasheet& d : kBundled) {
      cost::DatasheetAssumptions assumptions;
      assumptions.dtype = d.half ? cost::ComputeDtype::Half : cost::ComputeDtype::Fp32;
      check_datasheet_lines(cost::datasheet_profile(io::load_cluster(d.cluster), "x", assumptions), d);
    }
  }
  SECTION("a few betas worked by hand") {
    // flowmoe-cluster2: 4 nodes x 2 RTX2080Ti, one 10 Gb/s port = 1.25 GB/s x 0.8
    // = 1e9 B/s. Inter AlltoAll over g = 8, n = 2: (6/8) / (1e9 / 2) s = 1.5e-9 s
    // = 1.5e-6 ms per byte; allreduce 2 x 7/8 / 1e9 s = 1.75e-6 ms; P2P 1e-6 ms.
    const std::vector<ExpectedLine> c2 = datasheet_lines(kBundled[3]);
    CHECK(expected(c2, OpClass::A2A, LinkClass::Inter).beta_ms == Approx(1.5e-6).epsilon(1e-12));
    CHECK(expected(c2, OpClass::AllReduce, LinkClass::Inter).beta_ms == Approx(1.75e-6).epsilon(1e-12));
    CHECK(expected(c2, OpClass::P2P, LinkClass::Inter).beta_ms == Approx(1e-6).epsilon(1e-12));
    // dgx-h100: GEMM 1e3 / (989.5e12 x 0.77) = 1.31248e-12 ms per FLOP (its measured
    // gemm_efficiency); NVLink 450 GB/s x 0.8 = 360 GB/s: intra allreduce 1.75 / 360e9 x 1e3
    // = 4.8611e-9 ms per byte.
    const std::vector<ExpectedLine> dgx = datasheet_lines(kBundled[0]);
    CHECK(expected(dgx, OpClass::Gemm, LinkClass::Local).beta_ms == Approx(1.3124823635e-12).epsilon(1e-9));
    CHECK(expected(dgx, OpClass::AllReduce, LinkClass::Intra).beta_ms == Approx(4.8611111111e-9).epsilon(1e-9));
    // dgx-b200 with its NCCL figures: an AllGather over 4 GPUs starts in
    // 24.3 + 8.6 x 3 = 50.1 us and moves 3/4 of the bytes at 900 GB/s x 0.673
    // = 605.7 GB/s: 0.75 / 605.7e9 x 1e3 = 1.23823e-9 ms per byte.
    const std::vector<ExpectedLine> b200 = datasheet_lines(kBundled[8]);
    const auto four = std::find_if(b200.begin(), b200.end(), [](const ExpectedLine& l) {
      return l.op == OpClass::AllGather && l.link == LinkClass::Intra && l.group == 4;
    });
    REQUIRE(four != b200.end());
    CHECK(four->alpha_ms == Approx(0.0501).epsilon(1e-12));
    CHECK(four->beta_ms == Approx(0.75 / 605.7e9 * 1e3).epsilon(1e-12));
  }
  SECTION("the datasheet lines copied into the paper profiles of FSMoE's testbeds") {
    // docs/cost-model.md: lines the paper does not give come from the testbed's
    // datasheet profile, marked DATASHEET entry by entry.
    for (const Datasheet& d : {kBundled[4], kBundled[5]}) {
      const model::CostProfileSpec p = io::load_profile(d.cluster);
      int copied = 0;
      for (const model::LinearCostSpec& line : p.costs) {
        if (line.provenance != model::Provenance::Datasheet) continue;
        ++copied;
        INFO(d.cluster << " " << model::to_string(line.op) << " " << model::to_string(line.link));
        bool matched = false;
        for (const ExpectedLine& w : datasheet_lines(d))
          if (w.op == line.op && w.link == line.link) {
            matched = true;
            CHECK(line.group == w.group);
            CHECK(line.ranks_per_node == w.ranks_per_node);
            CHECK(line.alpha_ms == Approx(w.alpha_ms).epsilon(1e-12));
            CHECK(line.beta_ms_per_unit == Approx(w.beta_ms).epsilon(1e-12));
          }
        CHECK(matched);
      }
      CHECK(copied > 0);
    }
  }
}

TEST_CASE("cost::datasheet_profile writes the cluster file's fused attention rates as pass and head-dim lines",
          "[cost][attention]") {
  using model::AttentionPass;
  model::ClusterSpec b200 = io::load_cluster("dgx-b200");
  // The cluster file's four rates (SimuMax's B200 sweep, calibration/fits/fused_attention.py).
  REQUIRE(b200.gpu.fused_attention.size() == 4);
  const cost::CostModel costs(cost::datasheet_profile(b200, "x", {}));
  model::ModelSpec m;
  m.head_dim = 128;
  // 1e12 FLOPs at 2250 TFLOP/s x e take 1e3 / (2250 e) ms, plus the startup.
  CHECK(costs.attention_core(m, 8, 8, 1e12, AttentionPass::Forward).value == Approx(0.066 + 1e3 / (2250 * 0.571)));
  CHECK(costs.attention_core(m, 8, 8, 1e12, AttentionPass::Backward).value == Approx(0.046 + 1e3 / (2250 * 0.355)));
  m.head_dim = 192;  // MLA's q/k head dim
  CHECK(costs.attention_core(m, 8, 8, 1e12, AttentionPass::Forward).value == Approx(0.017 + 1e3 / (2250 * 0.407)));
  CHECK(costs.attention_core(m, 8, 8, 1e12, AttentionPass::Backward).value == Approx(0.030 + 1e3 / (2250 * 0.260)));
  // The generic line stays for the other families' attention tasks (0.05 ms, 0.39).
  CHECK(costs.compute(model::OpClass::Attention, 1e12).value == Approx(0.05 + 1e3 / (2250 * 0.39)));
  // fp32 profiles price the papers' own kernels: no fused lines, the generic one for both passes.
  cost::DatasheetAssumptions fp32;
  fp32.dtype = cost::ComputeDtype::Fp32;
  const model::CostProfileSpec p32 = cost::datasheet_profile(b200, "x", fp32);
  CHECK(std::none_of(p32.costs.begin(), p32.costs.end(),
                     [](const model::LinearCostSpec& c) { return c.attention_pass || c.head_dim; }));
  // A cluster without rates gets the generic line alone, as before.
  b200.gpu.fused_attention.clear();
  const cost::CostModel plain(cost::datasheet_profile(b200, "x", {}));
  CHECK(plain.attention_core(m, 8, 8, 1e12, AttentionPass::Backward).value == Approx(0.05 + 1e3 / (2250 * 0.39)));
}

TEST_CASE("cost::datasheet_profile writes the cluster file's fused cross-entropy rate as its own elementwise line",
          "[cost][ends]") {
  model::ClusterSpec b200 = io::load_cluster("dgx-b200");
  // The cluster file's rate (SimuMax's B200 measurement, docs/cost-model.md "The model's ends").
  REQUIRE(b200.gpu.fused_cross_entropy_efficiency);
  CHECK(*b200.gpu.fused_cross_entropy_efficiency == Approx(0.363));
  const cost::CostModel costs(cost::datasheet_profile(b200, "x", {}));
  // 1e9 bytes at 8000 GB/s x 0.363 take 1e3 / (8000 x 0.363) ms, plus the 0.01 ms startup.
  const std::optional<cost::Milliseconds> loss = costs.kernel_memory(model::kFusedCrossEntropyKernel, 1e9);
  REQUIRE(loss);
  CHECK(loss->value == Approx(0.01 + 1e3 / (8000 * 0.363)));
  // Every other memory-bound kernel keeps the generic line, 0.5 of the bandwidth.
  CHECK(costs.compute(model::OpClass::Elementwise, 1e9).value == Approx(0.01 + 1e3 / (8000 * 0.5)));
  // fp32 profiles price the papers' own kernels: no loss line; nor a cluster without the rate.
  cost::DatasheetAssumptions fp32;
  fp32.dtype = cost::ComputeDtype::Fp32;
  CHECK_FALSE(cost::CostModel(cost::datasheet_profile(b200, "x", fp32)).kernel_memory("fused_cross_entropy", 1e9));
  b200.gpu.fused_cross_entropy_efficiency.reset();
  CHECK_FALSE(cost::CostModel(cost::datasheet_profile(b200, "x", {})).kernel_memory("fused_cross_entropy", 1e9));
}

TEST_CASE("cost::datasheet_profile carries the host-issue model in half precision only", "[cost][host]") {
  const model::ClusterSpec dgx = io::load_cluster("dgx-h100");
  cost::DatasheetAssumptions assumed;
  assumed.host_issue = model::HostIssueModelSpec{1, 2, 3, 4, "test"};
  const model::CostProfileSpec half = cost::datasheet_profile(dgx, "x", assumed);
  REQUIRE(half.host_issue);
  CHECK(half.host_issue->attention_ms == 1);
  CHECK(half.host_issue->router_ms == 2);
  CHECK(half.host_issue->moe_ms == 3);
  CHECK(half.host_issue->local_expert_ms == 4);
  // fp32 profiles model the papers' own kernels, not Megatron-Core's Python.
  assumed.dtype = cost::ComputeDtype::Fp32;
  CHECK_FALSE(cost::datasheet_profile(dgx, "x", assumed).host_issue);
  // The bundled profiles are what datasheet-profile writes today: the half
  // ones carry the parts, the fp32 ones none.
  for (const Datasheet& d : kBundled) {
    INFO(d.cluster);
    const model::CostProfileSpec bundled = io::load_profile(std::string(d.cluster) + "-datasheet");
    CHECK(bundled.host_issue.has_value() == d.half);
    if (!d.half) continue;
    const cost::DatasheetAssumptions defaults;
    CHECK(bundled.host_issue->attention_ms == defaults.host_issue->attention_ms);
    CHECK(bundled.host_issue->router_ms == defaults.host_issue->router_ms);
    CHECK(bundled.host_issue->moe_ms == defaults.host_issue->moe_ms);
    CHECK(bundled.host_issue->local_expert_ms == defaults.host_issue->local_expert_ms);
  }
}
