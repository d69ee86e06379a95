#include <moeplan/cost/datasheet_profile.hpp>

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/cost/bus_factor.hpp>
#include <moeplan/core/units.hpp>

namespace moeplan::cost {
namespace {


model::LinearCostSpec line(model::OpClass op, model::LinkClass link, std::int64_t group, double alpha_ms,
                           double beta_ms_per_unit, std::string source,
                           std::optional<std::int64_t> ranks_per_node = std::nullopt) {
  model::LinearCostSpec c;
  c.op = op;
  c.link = link;
  c.group = group;
  c.ranks_per_node = ranks_per_node;
  c.alpha_ms = alpha_ms;
  c.beta_ms_per_unit = beta_ms_per_unit;
  c.r2 = 1.0;
  c.points = 0;
  c.provenance = model::Provenance::Datasheet;
  c.source = std::move(source);
  return c;
}

// CUTLASS's default tensor-core threadblock tile, 128 x 256
// (include/cutlass/gemm/device/default_gemm_configuration.h,
// DefaultGemmConfiguration<OpClassTensorOp, Sm80>: ThreadblockShape
// GemmShape<128, 256, 64>), for a GPU whose cluster file names none.
constexpr std::int64_t kDefaultTileM = 128;
constexpr std::int64_t kDefaultTileN = 256;
constexpr std::int64_t kSimtTile = 128;

}  // namespace

DatasheetAssumptions for_gpu(const model::GpuSpec& gpu, DatasheetAssumptions a) {
  // A measured or published tensor-core GEMM efficiency of this GPU replaces
  // the generic one; the fp32 (CUDA-core) GEMMs keep it.
  if (a.dtype == ComputeDtype::Half && gpu.gemm_efficiency) a.gemm_efficiency = *gpu.gemm_efficiency;
  if (a.dtype == ComputeDtype::Half) {
    a.attention_efficiency = a.fused_attention_efficiency;
    a.attention_alpha_ms = a.fused_attention_alpha_ms;
  } else {
    a.grouped_product_alpha_ms = 0;
    a.host_issue.reset();  // the papers' own fp32 kernels, not Megatron-Core's eager Python
  }
  return a;
}

std::optional<model::GemmShapeModelSpec> datasheet_gemm_shape(const model::GpuSpec& gpu,
                                                              const DatasheetAssumptions& assumed) {
  const DatasheetAssumptions a = for_gpu(gpu, assumed);
  if (!gpu.sm_count || !gpu.memory_bytes_per_s) return std::nullopt;
  const double half_peak = gpu.peak_flops_per_s_bf16 > 0 ? gpu.peak_flops_per_s_bf16 : gpu.peak_flops_per_s_fp16;
  const double peak = a.dtype == ComputeDtype::Half ? half_peak : gpu.peak_flops_per_s_fp32;
  if (peak <= 0) return std::nullopt;
  model::GemmShapeModelSpec g;
  g.units = *gpu.sm_count;
  if (a.dtype == ComputeDtype::Half) {
    g.tile_m = gpu.gemm_tile_m.value_or(kDefaultTileM);
    g.tile_n = gpu.gemm_tile_n.value_or(kDefaultTileN);
  } else {
    // fp32 runs on the CUDA cores: CUTLASS's SIMT default tile, 128 x 128
    // (DefaultGemmConfiguration<OpClassSimt>: ThreadblockShape GemmShape<128, 128, 8>).
    g.tile_m = kSimtTile;
    g.tile_n = kSimtTile;
  }
  g.peak_flops_per_s = peak;
  // FP8 operands run on the tensor cores at their FP8 peak, with the same tiles.
  if (a.dtype == ComputeDtype::Half) g.peak_flops_per_s_fp8 = gpu.peak_flops_per_s_fp8;
  g.memory_bytes_per_s = *gpu.memory_bytes_per_s;
  // The gemm line's efficiency: a GEMM that fills whole waves costs what the line says.
  g.efficiency = a.gemm_efficiency;
  g.alpha_ms = a.compute_alpha_ms;
  g.product_alpha_ms = a.grouped_product_alpha_ms;
  g.provenance = model::Provenance::Datasheet;
  g.source = fmt::format("{}: {} SMs, {} peak {:.4g} TFLOP/s x efficiency {}, memory {:.4g} GB/s, tile {} x {}{}",
                         gpu.name, g.units, a.dtype == ComputeDtype::Half ? "half-precision tensor" : "fp32",
                         peak / 1e12, a.gemm_efficiency, g.memory_bytes_per_s / 1e9, g.tile_m, g.tile_n,
                         a.dtype == ComputeDtype::Fp32 ? " (CUTLASS SIMT default)"
                         : gpu.gemm_tile_m             ? ""
                                                       : " (CUTLASS default)");
  return g;
}

model::CostProfileSpec datasheet_profile(const model::ClusterSpec& cluster, const std::string& name,
                                         const DatasheetAssumptions& assumed) {
  const DatasheetAssumptions a = for_gpu(cluster.gpu, assumed);
  model::CostProfileSpec p;
  p.name = name;
  p.cluster = cluster.name;
  const model::GpuSpec& gpu = cluster.gpu;
  const double half_peak = gpu.peak_flops_per_s_bf16 > 0 ? gpu.peak_flops_per_s_bf16 : gpu.peak_flops_per_s_fp16;
  const double peak = a.dtype == ComputeDtype::Half ? half_peak : gpu.peak_flops_per_s_fp32;
  if (peak <= 0)
    throw_input_error(
        "gpu", fmt::format("cluster {} has no peak FLOP/s for the chosen dtype", quoted_for_error(cluster.name)));
  const char* dtype = a.dtype == ComputeDtype::Half ? "half-precision tensor" : "fp32";
  const char* gemm_from = a.gemm_efficiency != assumed.gemm_efficiency ? " (gpu.gemm_efficiency)" : "";
  p.costs.push_back(line(
      model::OpClass::Gemm, model::LinkClass::Local, 1, a.compute_alpha_ms, kMsPerSecond / (peak * a.gemm_efficiency),
      fmt::format("{} {} peak {:.4g} TFLOP/s x efficiency {}{}", gpu.name, dtype, peak / 1e12, a.gemm_efficiency,
                  gemm_from)));
  p.costs.push_back(line(
      model::OpClass::Attention, model::LinkClass::Local, 1, a.attention_alpha_ms,
      kMsPerSecond / (peak * a.attention_efficiency),
      fmt::format("{} {} peak {:.4g} TFLOP/s x efficiency {}", gpu.name, dtype, peak / 1e12, a.attention_efficiency)));
  // The GPU's fused attention kernels by pass and head dim, measured or
  // published (the cluster file's gpu.fused_attention): half precision only,
  // as the kernels run; the generic line above prices every other case.
  if (a.dtype == ComputeDtype::Half)
    for (const model::FusedAttentionRate& r : gpu.fused_attention) {
      model::LinearCostSpec c = line(
          model::OpClass::Attention, model::LinkClass::Local, 1, r.alpha_ms, kMsPerSecond / (peak * r.efficiency),
          fmt::format("{} fused attention {}{}: half-precision tensor peak {:.4g} TFLOP/s x efficiency {} "
                      "(gpu.fused_attention)",
                      gpu.name, r.pass == model::AttentionPass::Forward ? "forward" : "backward",
                      r.head_dim ? fmt::format(", head dim {}", *r.head_dim) : std::string(), peak / 1e12,
                      r.efficiency));
      c.attention_pass = r.pass;
      c.head_dim = r.head_dim;
      p.costs.push_back(std::move(c));
    }
  // FP8 GEMMs at the FP8 peak times the BF16 GEMMs' efficiency (an assumption
  // until FP8 GEMMs are measured: docs/cost-model.md, "FP8").
  if (a.dtype == ComputeDtype::Half && gpu.peak_flops_per_s_fp8 > 0)
    p.costs.push_back(line(model::OpClass::GemmFp8, model::LinkClass::Local, 1, a.compute_alpha_ms,
                           kMsPerSecond / (gpu.peak_flops_per_s_fp8 * a.gemm_efficiency),
                           fmt::format("{} FP8 tensor peak {:.4g} TFLOP/s x efficiency {}{}", gpu.name,
                                       gpu.peak_flops_per_s_fp8 / 1e12, a.gemm_efficiency, gemm_from)));
  if (gpu.memory_bytes_per_s)
    p.costs.push_back(line(model::OpClass::Elementwise, model::LinkClass::Local, 1, a.compute_alpha_ms,
                           kMsPerSecond / (*gpu.memory_bytes_per_s * a.elementwise_efficiency),
                           fmt::format("{} memory {:.4g} GB/s x efficiency {}", gpu.name,
                                       *gpu.memory_bytes_per_s / 1e9, a.elementwise_efficiency)));
  // One kernel's ELEMENTWISE line at the GPU's measured or published share of
  // its memory bandwidth (a cluster file's field, named in the source).
  const auto kernel_line = [&](const std::optional<double>& share, const char* kernel, const char* what,
                               const char* field) {
    if (!share || !gpu.memory_bytes_per_s) return;
    model::LinearCostSpec c =
        line(model::OpClass::Elementwise, model::LinkClass::Local, 1, a.compute_alpha_ms,
             kMsPerSecond / (*gpu.memory_bytes_per_s * *share),
             fmt::format("{} {}: memory {:.4g} GB/s x efficiency {} ({})", gpu.name, what,
                         *gpu.memory_bytes_per_s / 1e9, *share, field));
    c.kernel = kernel;
    p.costs.push_back(std::move(c));
  };
  // Transformer Engine's fused cross-entropy: a half-precision loss, as it runs.
  if (a.dtype == ComputeDtype::Half)
    kernel_line(gpu.fused_cross_entropy_efficiency, model::kFusedCrossEntropyKernel, "fused cross-entropy",
                "gpu.fused_cross_entropy_efficiency");
  // Megatron-Core DDP's streaming passes over the gradient buffers (zero,
  // NaN-check norm, pre-scaling), in any dtype.
  kernel_line(gpu.gradient_buffer_efficiency, model::kGradientBufferKernel, "gradient buffer passes",
              "gpu.gradient_buffer_efficiency");
  p.gemm_shape = datasheet_gemm_shape(gpu, a);
  p.host_issue = a.host_issue;
  const model::OpClass collectives[] = {model::OpClass::A2A, model::OpClass::AllGather, model::OpClass::ReduceScatter,
                                        model::OpClass::AllReduce};
  // Bus bandwidth (nccl-tests' busbw) of each line, for one communicator
  // running alone (concurrent_groups 1) with the placement written on the line:
  // - intra: one GPU port;
  // - inter, ring collectives (allreduce, allgather, reducescatter) over the
  //   whole cluster: every ring crosses each node's NICs once per direction, so
  //   the bus bandwidth is the node's NIC bandwidth (ports x port bandwidth);
  // - inter, AlltoAll over g GPUs on nodes of n: a GPU sends the (g - n) / g of
  //   its data bound for other nodes through its 1/n share of the NICs, so
  //   busbw = (g - 1) / (g - n) x NIC bandwidth / n;
  // - inter, one pair of GPUs alone: one NIC port.
  // The cost model moves these to other placements (docs/cost-model.md).
  // A "node" below is the link domain (the NVLink domain, else the node), its
  // NICs its nodes' ports together (model::ClusterSpec::link_domain).
  const std::int64_t domain = cluster.link_domain();
  // The intra link's own NCCL figures (cluster file, measured or published) replace the generic ones.
  const model::LinkSpec& intra = cluster.intra_link;
  const std::optional<model::IntraCollectivesSpec>& nccl = cluster.intra_collectives;
  const double intra_efficiency = nccl && nccl->efficiency ? *nccl->efficiency : a.link_efficiency;
  const double intra_bw = intra.bandwidth_bytes_per_s * intra_efficiency;
  const double node_nic_bw = cluster.inter_link.bandwidth_bytes_per_s *
                             static_cast<double>(cluster.link_domain_ports()) * a.link_efficiency;
  const double n = static_cast<double>(domain);
  auto inter_bw = [&](model::OpClass op, std::int64_t group) {
    if (op != model::OpClass::A2A) return node_nic_bw;
    const double g = static_cast<double>(group);
    return (g - 1.0) / std::max(g - n, 1.0) * node_nic_bw / n;
  };
  const std::string intra_src = fmt::format("{} {:.4g} GB/s x efficiency {}{}", intra.name,
                                            intra.bandwidth_bytes_per_s / 1e9, intra_efficiency,
                                            nccl && nccl->efficiency ? " (intra_collectives)" : "");
  const std::string inter_src =
      domain == cluster.gpus_per_node
          ? fmt::format("{} {} x {:.4g} GB/s per node, {} GPUs per node, x efficiency {}", cluster.inter_link.name,
                        cluster.inter_link.ports_per_node, cluster.inter_link.bandwidth_bytes_per_s / 1e9,
                        cluster.gpus_per_node, a.link_efficiency)
          : fmt::format("{} {} x {:.4g} GB/s per {}-GPU NVLink domain, x efficiency {}", cluster.inter_link.name,
                        cluster.link_domain_ports(), cluster.inter_link.bandwidth_bytes_per_s / 1e9, domain,
                        a.link_efficiency);
  if (domain > 1) {
    // The startup of a collective over g ranks: fixed + step x (g - 1) (one
    // per ring step) where the link gives a step, at g = 2, 4, ... up to the
    // domain so that the cost model's nearest line has the group's own
    // startup; else the generic startup on one line at the domain.
    const double fixed = nccl && nccl->fixed_ms ? *nccl->fixed_ms : a.intra_alpha_ms;
    const double step = nccl ? nccl->step_ms : 0.0;
    std::vector<std::int64_t> groups;
    if (step > 0)
      for (std::int64_t g = 2; g < domain; g *= 2) groups.push_back(g);
    groups.push_back(domain);
    for (const std::int64_t g : groups)
      for (model::OpClass op : collectives)
        p.costs.push_back(line(op, model::LinkClass::Intra, g, fixed + step * static_cast<double>(g - 1),
                               bus_factor(op, g) * kMsPerSecond / intra_bw, intra_src, g));
    p.costs.push_back(
        line(model::OpClass::P2P, model::LinkClass::Intra, 2, fixed + step, kMsPerSecond / intra_bw, intra_src, 2));
  }
  if (cluster.world_size() > domain) {
    const std::int64_t g = cluster.world_size();
    for (model::OpClass op : collectives)
      p.costs.push_back(line(op, model::LinkClass::Inter, g, a.inter_alpha_ms,
                             bus_factor(op, g) * kMsPerSecond / inter_bw(op, g), inter_src, domain));
    // One GPU pair crossing nodes, alone: one NIC port.
    const double port_bw = cluster.inter_link.bandwidth_bytes_per_s * a.link_efficiency;
    p.costs.push_back(
        line(model::OpClass::P2P, model::LinkClass::Inter, 2, a.inter_alpha_ms, kMsPerSecond / port_bw, inter_src, 1));
  }
  return p;
}

}  // namespace moeplan::cost
