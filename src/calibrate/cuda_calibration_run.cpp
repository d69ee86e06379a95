// `moeplan calibrate --backend cuda` in the CUDA plug-in: what is measured, in
// which order, on which rank; the GPU work itself is in cuda_calibration.cu
// (cuda_bench.hpp).
// Mirrors host_calibration.cpp and fills the same HostCalibration, so the
// points CSV and the fit are the host backend's.

#include <moeplan/calibrate/cuda_calibration.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <ostream>
#include <string>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/hostrt/mpi_poll.hpp>  // <mpi.h> and check_mpi, with MPI
#include <moeplan/hostrt/mpi_session.hpp>

#include "cuda_bench.hpp"

namespace moeplan::calibrate {

namespace {

using Clock = std::chrono::steady_clock;
#ifdef MOEPLAN_WITH_MPI
using hostrt::check_mpi;
using hostrt::start_mpi_session;
#endif

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void progress(const CudaCalibrationOptions& o, int rank, const std::string& line) {
  if (o.progress != nullptr && rank == 0) *o.progress << "moeplan calibrate: " << line << std::endl;
}

// The overlap GEMM: a Mixtral-8x7B expert's up-projection (d_model 4096,
// hidden 14336) over 8192 tokens, ~1 ms on an H100: long enough that event
// timing resolution (~0.5 us) does not matter, the size Echo's kernels have.
constexpr GemmShape kOverlapGemm{8192, 4096, 14336};
constexpr std::size_t kCopyPartnerBytes = std::size_t{256} << 20;
constexpr double kWarmUpSeconds = 3.0;
constexpr std::size_t kAllReducePartnerBytes = std::size_t{64} << 20;
// The SM partner: a 64 MiB copy kernel on 32 thread blocks, the footprint of
// an NCCL kernel (one block per channel; NCCL_MAX_NCHANNELS defaults to 32).
constexpr std::size_t kSmPartnerBytes = std::size_t{64} << 20;
constexpr int kSmPartnerBlocks = 32;

Repetitions overlap_repetitions(bool quick) { return Repetitions{2, quick ? 9 : 21}; }

// The buffers must hold every grid shape and the overlap GEMM.
std::vector<GemmShape> shapes_to_hold(bool quick) {
  std::vector<GemmShape> shapes = cuda_gemm_grid(quick);
  shapes.push_back(kOverlapGemm);
  return shapes;
}

// Partner ops that outlast the warm-up and timed GEMMs twice over, plus one.
int partner_count(double gemm_ms, double partner_ms, const Repetitions& reps) {
  const double needed = 2.0 * gemm_ms * (reps.warmup + reps.timed);
  return 1 + static_cast<int>(std::ceil(needed / std::max(partner_ms, 1e-3)));
}

OverlapMeasurement finish(OverlapMeasurement m, const gpu::Beside& beside, const std::string& partner) {
  if (!beside.covered)
    throw Error(ErrorKind::Runtime, fmt::format("overlap: {} ended before the last GEMM; the slow-down would mix in "
                                                "GEMMs that ran alone",
                                                partner));
  m.with_ms = median(beside.gemm_ms);
  m.partner = partner;
  m.slowdown = std::max(1.0, m.with_ms / m.alone_ms);
  return m;
}

cost::GemmShape shape_of(const GemmShape& s, bool fp8) {
  cost::GemmShape g;
  g.m = static_cast<double>(s.tokens);
  g.n = static_cast<double>(s.ffn);
  g.k = static_cast<double>(s.d_model);
  g.element_bytes = 2;  // bf16 (C is bf16 for FP8 operands too)
  g.fp8 = fp8;
  return g;
}

void measure_compute(const CudaCalibrationOptions& o, gpu::Bench& bench, HostCalibration& out) {
  const Repetitions reps = repetitions(o.quick);
  Clock::time_point start = Clock::now();
  // An idle GPU starts at low clocks (an H200 read 345 MHz idle, 1980 under
  // load): three calibrations on fresh H100s without this gave their largest
  // GEMM 695-784 TFLOP/s (docs/validation.md, "GPU runs").
  bench.warm_up(kOverlapGemm, o.quick ? 0.5 : kWarmUpSeconds);
  progress(o, 0, fmt::format("warm-up: GEMM {}x{}x{} back to back, {:.1f} s", kOverlapGemm.tokens, kOverlapGemm.d_model,
                             kOverlapGemm.ffn, seconds_since(start)));
  start = Clock::now();
  const std::vector<GemmShape> gemms = cuda_gemm_grid(o.quick);
  out.gemm_units = bench.sm_count();
  out.gemm_tile_m = kCudaGemmTileM;
  out.gemm_tile_n = kCudaGemmTileN;
  for (const GemmShape& s : gemms) {
    out.samples.push_back({model::OpClass::Gemm,
                           model::LinkClass::Local,
                           1,
                           gemm_flops(s),
                           median(bench.gemm_ms(s, reps)),
                           std::nullopt,
                           {}});
    out.gemm_points.push_back({shape_of(s, false), out.samples.back().time_ms});
  }
  const model::TimingSample& big = out.samples.back();
  progress(o, 0,
           fmt::format("gemm: {} shapes (bf16, tensor cores), median of {} after {} warm-up, largest {:.4g} "
                       "TFLOP/s, {:.1f} s",
                       gemms.size(), reps.timed, reps.warmup, big.size / big.time_ms / 1e9, seconds_since(start)));
  start = Clock::now();
  for (const GemmShape& s : gemms) {
    out.samples.push_back({model::OpClass::GemmFp8,
                           model::LinkClass::Local,
                           1,
                           gemm_flops(s),
                           median(bench.gemm_fp8_ms(s, reps)),
                           std::nullopt,
                           {}});
    out.gemm_points_fp8.push_back({shape_of(s, true), out.samples.back().time_ms});
  }
  progress(o, 0,
           fmt::format("gemm_fp8: {} shapes (E4M3 operands on cuBLASLt, bf16 out), largest {:.4g} TFLOP/s, {:.1f} s",
                       gemms.size(), out.samples.back().size / out.samples.back().time_ms / 1e9,
                       seconds_since(start)));
  start = Clock::now();
  for (const GroupedGemmShape& g : cuda_grouped_grid(o.quick))
    out.grouped_points.push_back({g, median(bench.grouped_gemm_ms(g.per_expert, g.experts, true, reps)),
                                  median(bench.grouped_gemm_ms(g.per_expert, g.experts, false, reps))});
  {
    const GroupedGemmPoint& p = out.grouped_points.front();
    progress(o, 0,
             fmt::format("grouped gemm: {} shapes, batched against a loop of launches; {} experts x {} tokens x {} "
                         "x {}: {:.4g} ms against {:.4g} ms, {:.1f} s",
                         out.grouped_points.size(), p.shape.experts, p.shape.per_expert.tokens,
                         p.shape.per_expert.d_model, p.shape.per_expert.ffn, p.batched_ms, p.loop_ms,
                         seconds_since(start)));
  }
  start = Clock::now();
  for (std::size_t n : cuda_cast_elements(o.quick))
    out.samples.push_back({model::OpClass::Elementwise,
                           model::LinkClass::Local,
                           1,
                           3.0 * static_cast<double>(n),  // bytes: 2 read (bf16) + 1 written (FP8)
                           median(bench.cast_ms(n, reps)),
                           std::nullopt,
                           {}});
  out.memory_bytes_per_s = out.samples.back().size / out.samples.back().time_ms * 1e3;
  progress(o, 0,
           fmt::format("elementwise: bf16 -> FP8 casts of {} sizes, largest {:.4g} GB/s, {:.1f} s",
                       cuda_cast_elements(o.quick).size(), out.memory_bytes_per_s / 1e9, seconds_since(start)));
  start = Clock::now();
  const std::vector<AttentionShape> attention = cuda_attention_grid(o.quick);
  for (const AttentionShape& s : attention) {
    out.samples.push_back({model::OpClass::Attention,
                           model::LinkClass::Local,
                           1,
                           attention_flops(s),
                           median(bench.attention_ms(s, reps)),
                           std::nullopt,
                           {}});
    out.attention_points.push_back({s.query_count(), s.seq_len, s.heads, s.head_dim, out.samples.back().time_ms});
  }
  out.attention_block_rows = kAttentionQueryBlock;  // the kernel's query block (cuda_ops.cuh)
  progress(o, 0,
           fmt::format("attention: {} shapes (block-causal batched GEMMs + softmax), median of {} after {} "
                       "warm-up, {:.1f} s",
                       attention.size(), reps.timed, reps.warmup, seconds_since(start)));
  start = Clock::now();
  const Repetitions overlap_reps = overlap_repetitions(o.quick);
  OverlapMeasurement m;
  m.gemm = kOverlapGemm;
  m.alone_ms = median(bench.gemm_ms(m.gemm, overlap_reps));
  // A same-device cudaMemcpyAsync is a copy kernel on the SMs, not the copy
  // engines, so beside the GEMMs it runs slower than alone and the count from
  // its time alone can end first (seen on an H200, 2026-11-26): then 4x more,
  // at most three times.
  int copies = partner_count(m.alone_ms, bench.copy_ms(kCopyPartnerBytes), overlap_reps);
  gpu::Beside beside = bench.gemm_beside_copies(m.gemm, overlap_reps, copies, kCopyPartnerBytes);
  for (int retry = 0; !beside.covered && retry < 3; ++retry) {
    copies *= 4;
    beside = bench.gemm_beside_copies(m.gemm, overlap_reps, copies, kCopyPartnerBytes);
  }
  out.overlap = finish(m, beside,
                       fmt::format("device-to-device copies of {} MiB on another stream (the copy engines: the "
                                   "one-GPU proxy of a collective)",
                                   kCopyPartnerBytes >> 20));
  out.overlap_measurements.push_back(out.overlap);
  progress(o, 0,
           fmt::format("overlap: GEMM {}x{}x{} alone {:.4g} ms, beside {} copies {:.4g} ms, slowdown {:.4g}, "
                       "{:.1f} s",
                       m.gemm.tokens, m.gemm.d_model, m.gemm.ffn, out.overlap.alone_ms, copies, out.overlap.with_ms,
                       out.overlap.slowdown, seconds_since(start)));
  // Beside a kernel on a few SMs (what NCCL's kernels are): recorded, not the
  // profile's line, which stays the copy engines' until NCCL itself is measured.
  start = Clock::now();
  int kernels = partner_count(m.alone_ms, bench.sm_copy_ms(kSmPartnerBytes, kSmPartnerBlocks), overlap_reps);
  gpu::Beside sm = bench.gemm_beside_sm_copies(m.gemm, overlap_reps, kernels, kSmPartnerBytes, kSmPartnerBlocks);
  for (int retry = 0; !sm.covered && retry < 3; ++retry) {
    kernels *= 4;
    sm = bench.gemm_beside_sm_copies(m.gemm, overlap_reps, kernels, kSmPartnerBytes, kSmPartnerBlocks);
  }
  const OverlapMeasurement on_sms =
      finish(m, sm,
             fmt::format("copy kernels of {} MiB on {} thread blocks on another stream (the footprint of an NCCL "
                         "kernel)",
                         kSmPartnerBytes >> 20, kSmPartnerBlocks));
  out.overlap_measurements.push_back(on_sms);
  progress(o, 0,
           fmt::format("overlap: GEMM beside {} copy kernels on {} blocks {:.4g} ms, slowdown {:.4g}, {:.1f} s",
                       kernels, kSmPartnerBlocks, on_sms.with_ms, on_sms.slowdown, seconds_since(start)));
}

#ifdef MOEPLAN_WITH_MPI

// The slowest rank's time of each repetition (a collective ends when its last rank does).
std::vector<double> slowest(std::vector<double> mine) {
  std::vector<double> all(mine.size());
  check_mpi(MPI_Allreduce(mine.data(), all.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
            "MPI_Allreduce");
  return all;
}

// intra when every rank runs on this rank's host, else inter.
model::LinkClass link_of_world(int world) {
  std::vector<char> names(static_cast<std::size_t>(world) * MPI_MAX_PROCESSOR_NAME, '\0');
  std::vector<char> mine(MPI_MAX_PROCESSOR_NAME, '\0');
  int length = 0;
  check_mpi(MPI_Get_processor_name(mine.data(), &length), "MPI_Get_processor_name");
  check_mpi(MPI_Allgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                          MPI_COMM_WORLD),
            "MPI_Allgather");
  for (int r = 0; r < world; ++r)
    if (std::string(names.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME) != mine.data())
      return model::LinkClass::Inter;
  return model::LinkClass::Intra;
}

void measure_collectives(const CudaCalibrationOptions& o, gpu::Bench& bench, HostCalibration& out) {
  const Repetitions reps = repetitions(o.quick);
  const model::LinkClass link = link_of_world(out.world_size);
  const std::pair<model::OpClass, const char*> ops[] = {{model::OpClass::A2A, "alltoall (grouped send/recv)"},
                                                        {model::OpClass::AllGather, "allgather"},
                                                        {model::OpClass::ReduceScatter, "reducescatter"},
                                                        {model::OpClass::AllReduce, "allreduce"},
                                                        {model::OpClass::P2P, "p2p (send/recv)"}};
  const std::vector<double> sizes = message_sizes(o.quick);
  for (const auto& [op, name] : ops) {
    const Clock::time_point start = Clock::now();
    for (double size : sizes)
      out.samples.push_back(
          {op, link, out.world_size, size, median(slowest(bench.collective_ms(op, size, reps))), std::nullopt, {}});
    const double ms = out.samples.back().time_ms;
    const double algbw = sizes.back() / ms / 1e6;  // GB/s: bytes / ms / 1e6
    progress(o, out.rank,
             fmt::format("{}: {} ranks, {} sizes {:.0f} .. {:.0f} bytes, median of {} after {} warm-up; largest: "
                         "algbw {:.4g} GB/s, busbw {:.4g} GB/s, {:.1f} s",
                         name, out.world_size, sizes.size(), sizes.front(), sizes.back(), reps.timed, reps.warmup,
                         algbw, algbw * bus_bandwidth_factor(op, out.world_size), seconds_since(start)));
  }
}

// Rank 0 times the overlap GEMM while every rank's side stream runs 64 MiB
// ncclAllReduce calls; rank 0 says how many, so every rank issues the same.
void measure_nccl_overlap(const CudaCalibrationOptions& o, gpu::Bench& bench, HostCalibration& out) {
  const Clock::time_point start = Clock::now();
  const Repetitions reps = overlap_repetitions(o.quick);
  const double allreduce = median(slowest({bench.allreduce_ms(kAllReducePartnerBytes)}));
  int count = out.rank == 0 ? partner_count(out.overlap.alone_ms, allreduce, reps) : 0;
  check_mpi(MPI_Bcast(&count, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  const gpu::Beside beside =
      bench.gemm_beside_allreduce(out.rank == 0 ? &out.overlap.gemm : nullptr, reps, count, kAllReducePartnerBytes);
  if (out.rank != 0) return;
  const OverlapMeasurement m = finish(out.overlap, beside,
                                      fmt::format("a {} MiB ncclAllReduce loop over {} ranks on another stream",
                                                  kAllReducePartnerBytes >> 20, out.world_size));
  out.overlap = m;
  out.overlap_measurements.push_back(m);
  progress(o, 0,
           fmt::format("overlap: GEMM beside an ncclAllReduce loop {:.4g} ms (alone {:.4g} ms), slowdown "
                       "{:.4g}, {:.1f} s",
                       m.with_ms, m.alone_ms, m.slowdown, seconds_since(start)));
}

void run_under_mpi(const CudaCalibrationOptions& o, int devices, HostCalibration& out) {
  start_mpi_session();  // ended at exit: validate-hw --calibrate replays in the same session
  try {
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &out.world_size), "MPI_Comm_size");
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &out.rank), "MPI_Comm_rank");
    gpu::Bench bench(out.rank % devices, shapes_to_hold(o.quick), cuda_grouped_grid(o.quick),
                     cuda_cast_elements(o.quick).back());
    out.device = bench.device_name();
    if (out.rank == 0) measure_compute(o, bench, out);
    check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    if (out.world_size > 1) {
      gpu::UniqueId id{};
      if (out.rank == 0) id = gpu::nccl_unique_id();
      check_mpi(MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
      bench.init_nccl(id, out.world_size, out.rank);
      measure_nccl_overlap(o, bench, out);
      measure_collectives(o, bench, out);
      out.collectives_measured = true;
    } else {
      out.note = "mpirun started 1 rank: no collective lines were measured (run under mpirun -n 2, one GPU per rank)";
    }
  } catch (const std::exception& e) {
    // One rank failing would leave the others waiting in a collective.
    std::cerr << "moeplan: error: rank " << out.rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
#endif

}  // namespace

HostCalibration gpu::run_calibration(const CudaCalibrationOptions& o) {
  std::string why;
  const int devices = gpu::device_count(why);
  if (devices == 0) throw Error(ErrorKind::Runtime, fmt::format("no CUDA GPU found ({})", why), "request.backend");
  HostCalibration out;
  out.backend = "cuda";
#ifdef MOEPLAN_WITH_MPI
  out.mpi_built = true;
  if (launched_by_mpirun()) {
    run_under_mpi(o, devices, out);
    return out;
  }
  out.note = "not started by mpirun: no collective lines were measured (run under mpirun -n 2, one GPU per rank)";
#else
  if (const char* size = std::getenv("OMPI_COMM_WORLD_SIZE"); size != nullptr && std::string(size) != "1")
    throw Error(ErrorKind::Runtime,
                fmt::format("started by mpirun with {} ranks, but this moeplan was built without "
                            "MPI (MOEPLAN_WITH_MPI, libopenmpi-dev): every rank would measure alone",
                            size));
  out.note = "built without MPI: no collective lines were measured";
#endif
  gpu::Bench bench(0, shapes_to_hold(o.quick), cuda_grouped_grid(o.quick), cuda_cast_elements(o.quick).back());
  out.device = bench.device_name();
  measure_compute(o, bench, out);
  return out;
}

}  // namespace moeplan::calibrate
