#include <moeplan/calibrate/host_calibration.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <limits>
#include <ostream>
#include <thread>

#include <Eigen/Dense>
#include <fmt/format.h>

#ifdef MOEPLAN_WITH_MPI
// The C API only: Open MPI's deprecated C++ bindings do not compile warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include <moeplan/core/error.hpp>
#include <moeplan/cost/fit.hpp>
#include <moeplan/cost/workload_sizing.hpp>
#include <moeplan/hostrt/host_kernels.hpp>
#include <moeplan/hostrt/mpi_poll.hpp>
#include <moeplan/hostrt/mpi_session.hpp>

namespace moeplan::calibrate {

// The kernels and the MPI waits the executor replays with (hostrt/).
using hostrt::HostAttention;
using hostrt::HostGemm;
using hostrt::precise_sleeps;
using hostrt::start_mpi_session;
#ifdef MOEPLAN_WITH_MPI
using hostrt::check_mpi;
using hostrt::wait_polled;
#endif

double gemm_flops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.tokens) * static_cast<double>(s.d_model) * static_cast<double>(s.ffn);
}

std::vector<GemmShape> gemm_grid(bool quick) {
  const std::vector<std::int64_t> tokens = quick ? std::vector<std::int64_t>{16, 64, 256}
                                                 : std::vector<std::int64_t>{16, 64, 256, 1024};
  const std::vector<std::int64_t> d_model = quick ? std::vector<std::int64_t>{256} : std::vector<std::int64_t>{256, 512};
  const std::vector<std::int64_t> ffn = quick ? std::vector<std::int64_t>{512, 1024}
                                              : std::vector<std::int64_t>{512, 2048};
  std::vector<GemmShape> grid;
  for (std::int64_t t : tokens)
    for (std::int64_t d : d_model)
      for (std::int64_t f : ffn) grid.push_back({t, d, f});
  return grid;
}

double attention_flops(const AttentionShape& s) {
  model::ModelSpec m;
  m.num_heads = s.heads;
  m.num_kv_heads = s.heads;
  m.head_dim = s.head_dim;
  return cost::attention_core_flops(m, static_cast<double>(s.query_count()), static_cast<double>(s.seq_len));
}

std::vector<AttentionShape> attention_grid(bool quick) {
  const std::vector<std::int64_t> seq = quick ? std::vector<std::int64_t>{128, 256, 512}
                                              : std::vector<std::int64_t>{128, 256, 512, 1024, 2048};
  const std::vector<std::int64_t> head_dim{32, 64};
  std::vector<AttentionShape> grid;
  for (std::int64_t l : seq)
    for (std::int64_t k : head_dim) grid.push_back({l, 4, k});
  if (!quick) {
    grid.push_back({512, 4, 64, 128});
    grid.push_back({1024, 4, 64, 256});
  }
  return grid;
}

std::vector<double> message_sizes(bool quick) {
  const double kib = 1024.0;
  // Up to 2 MiB: above it Open MPI's shared-memory transport moves a message
  // fragment by fragment inside the polled tests (mpi_poll.hpp), a second
  // regime no one line fits (on host-2 a 4 MiB AlltoAll took 3.7x the time of
  // a 2 MiB one, 16 MiB 15x that of 4 MiB: docs/cost-model.md); the host
  // scenarios' messages are at most 2 MiB.
  const double first = quick ? 16 * kib : 4 * kib;
  const double step = quick ? 4 : 2;
  std::vector<double> sizes;
  for (double s = first; s <= 2 * kib * kib; s *= step) sizes.push_back(s);
  return sizes;
}

std::string points_path(const std::string& profile_path) {
  std::filesystem::path p(profile_path);
  p.replace_extension(".points.csv");
  return p.string();
}

Repetitions repetitions(bool quick) { return quick ? Repetitions{2, 9} : Repetitions{3, 25}; }

namespace {

using Clock = std::chrono::steady_clock;

double elapsed_ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

template <typename F>
double median_time_ms(const Repetitions& reps, F&& run) {
  for (int i = 0; i < reps.warmup; ++i) run();
  std::vector<double> times;
  for (int i = 0; i < reps.timed; ++i) {
    const Clock::time_point start = Clock::now();
    run();
    times.push_back(elapsed_ms(start));
  }
  return median(times);
}

double time_gemm(const GemmShape& s, const Repetitions& reps) {
  HostGemm gemm(s.tokens, s.d_model, s.ffn);
  return median_time_ms(reps, [&] { gemm.run(); });
}

// The block-causal kernel the executor replays (host_kernels.hpp), over the whole sequence.
double time_attention(const AttentionShape& s, const Repetitions& reps) {
  HostAttention attention(s.query_count(), s.seq_len, s.heads, s.head_dim);
  return median_time_ms(reps, [&] { attention.run(); });
}

// The host's stand-in for a communication kernel: copies of a 64 MiB buffer,
// bound by memory bandwidth, until told to stop.
class CopyLoop {
 public:
  CopyLoop() : from_(kBytes, 1), to_(kBytes, 0), thread_([this] { run(); }) {}
  ~CopyLoop() {
    stop_ = true;
    thread_.join();
  }
  CopyLoop(const CopyLoop&) = delete;
  CopyLoop& operator=(const CopyLoop&) = delete;
  static constexpr std::size_t kBytes = std::size_t{64} << 20;

 private:
  void run() {
    while (!stop_) {
      std::memcpy(to_.data(), from_.data(), kBytes);
      std::swap(from_, to_);
    }
  }
  std::vector<unsigned char> from_, to_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// More repetitions than the grid: the ratio of two medians is the result.
// Timings of one collective over its sizes, at most this many times while
// their fitted slope is not positive (a machine busy with other work).
constexpr int kCollectiveAttempts = 3;

Repetitions overlap_repetitions(bool quick) { return Repetitions{2, quick ? 9 : 21}; }

// The overlap GEMM: large enough (537 MFLOP, about 10 ms here) that a timer's
// resolution and a thread's start are negligible beside it.
constexpr GemmShape kOverlapGemm{256, 512, 2048};

OverlapMeasurement measure_overlap(bool quick) {
  OverlapMeasurement m;
  m.gemm = kOverlapGemm;
  const Repetitions reps = overlap_repetitions(quick);
  m.alone_ms = time_gemm(m.gemm, reps);
  {
    CopyLoop partner;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it start copying
    m.with_ms = time_gemm(m.gemm, reps);
  }
  m.partner = fmt::format("a thread copying a {} MiB buffer in a loop (memory-bandwidth-bound)",
                          CopyLoop::kBytes >> 20);
  m.slowdown = std::max(1.0, m.with_ms / m.alone_ms);
  return m;
}

// Median copy of the CopyLoop's 64 MiB buffer: each byte read once and written once.
double measure_memory_bandwidth(const Repetitions& reps) {
  const std::size_t bytes = CopyLoop::kBytes;
  std::vector<unsigned char> from(bytes, 1), to(bytes, 0);
  const double ms = median_time_ms(reps, [&] { std::memcpy(to.data(), from.data(), bytes); });
  return 2.0 * static_cast<double>(bytes) / (ms / 1e3);
}

void progress(const HostCalibrationOptions& o, const std::string& line) {
  if (o.progress) *o.progress << "moeplan calibrate: " << line << std::endl;
}

void measure_compute(const HostCalibrationOptions& o, HostCalibration& out) {
  const Repetitions reps = repetitions(o.quick);
  Clock::time_point start = Clock::now();
  const std::vector<GemmShape> gemms = gemm_grid(o.quick);
  for (const GemmShape& s : gemms) {
    model::TimingSample t;
    t.op = model::OpClass::Gemm;
    t.link = model::LinkClass::Local;
    t.group = 1;
    t.size = gemm_flops(s);
    t.time_ms = time_gemm(s, reps);
    out.samples.push_back(t);
    // HostGemm(m, k, n): A[tokens x d_model] B[d_model x ffn], float elements.
    const double to = static_cast<double>(s.tokens), d = static_cast<double>(s.d_model),
                 f = static_cast<double>(s.ffn);
    out.gemm_points.push_back({cost::GemmShape{to, f, d, 1, sizeof(float)}, t.time_ms});
  }
  out.memory_bytes_per_s = measure_memory_bandwidth(reps);
  progress(o, fmt::format("gemm: {} shapes, median of {} after {} warm-up, {:.1f} s", gemms.size(), reps.timed,
                          reps.warmup, elapsed_ms(start) / 1000.0));
  start = Clock::now();
  const std::vector<AttentionShape> attention = attention_grid(o.quick);
  for (const AttentionShape& s : attention) {
    model::TimingSample t;
    t.op = model::OpClass::Attention;
    t.link = model::LinkClass::Local;
    t.group = 1;
    t.size = attention_flops(s);
    t.time_ms = time_attention(s, reps);
    out.samples.push_back(t);
    out.attention_points.push_back({s.query_count(), s.seq_len, s.heads, s.head_dim, t.time_ms});
  }
  out.attention_block_rows = HostAttention::kBlockRows;
  progress(o, fmt::format("attention: {} shapes, median of {} after {} warm-up, {:.1f} s", attention.size(),
                          reps.timed, reps.warmup, elapsed_ms(start) / 1000.0));
  start = Clock::now();
  out.overlap = measure_overlap(o.quick);
  out.overlap_measurements.push_back(out.overlap);
  progress(o, fmt::format("overlap: GEMM {}x{}x{} alone {:.4g} ms, beside the copy loop {:.4g} ms, slowdown {:.4g}, "
                          "{:.1f} s",
                          out.overlap.gemm.tokens, out.overlap.gemm.d_model, out.overlap.gemm.ffn,
                          out.overlap.alone_ms, out.overlap.with_ms, out.overlap.slowdown,
                          elapsed_ms(start) / 1000.0));
}

#ifdef MOEPLAN_WITH_MPI

// Waits for every rank without spinning: the other ranks' compute benchmarks
// run meanwhile and must have the cores to themselves.
void quiet_barrier() {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
  for (int done = 0; !done;) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// One collective of nccl-tests "size" bytes (docs/cost-model.md), done as the
// executor does it (exec/host_backend.cpp, Replay::exchange): pairwise
// point-to-point messages of size / world bytes per peer, waited for by
// polling (mpi_poll.hpp): AlltoAll sends chunk j to rank j; AllGather its own
// chunk to every rank; ReduceScatter chunk j to rank j and sums what it
// receives; AllReduce a ReduceScatter, then an AllGather of the reduced chunk;
// P2P the whole size to the next rank (from the previous one). What the
// profile prices is then what the executor replays, its waits included.
double time_collective(model::OpClass op, double size, int world, int rank, const Repetitions& reps) {
  const int count = static_cast<int>(size / sizeof(float));
  const int per_rank = std::max(1, count / world);
  const std::size_t chunk = static_cast<std::size_t>(per_rank);
  const std::size_t floats = chunk * static_cast<std::size_t>(world);
  std::vector<float> send(std::max(floats, static_cast<std::size_t>(count)), 1.0f),
      recv(std::max(floats, static_cast<std::size_t>(count)), 0.0f);
  const int next = (rank + 1) % world;
  const int previous = (rank + world - 1) % world;
  std::vector<MPI_Request> requests;
  auto exchange = [&](int phase, bool own_chunk_only) {
    for (int j = 0; j < world; ++j) {
      if (j == rank) continue;
      requests.emplace_back();
      check_mpi(MPI_Isend(send.data() + static_cast<std::size_t>(own_chunk_only ? rank : j) * chunk, per_rank,
                          MPI_FLOAT, j, phase, MPI_COMM_WORLD, &requests.back()),
                "MPI_Isend");
      requests.emplace_back();
      check_mpi(MPI_Irecv(recv.data() + static_cast<std::size_t>(j) * chunk, per_rank, MPI_FLOAT, j, phase,
                          MPI_COMM_WORLD, &requests.back()),
                "MPI_Irecv");
    }
    wait_polled(static_cast<int>(requests.size()), requests.data());
    requests.clear();
  };
  auto reduce_into_mine = [&] {
    float* mine = send.data() + static_cast<std::size_t>(rank) * chunk;
    for (int j = 0; j < world; ++j)
      if (j != rank)
        for (std::size_t e = 0; e < chunk; ++e) mine[e] += recv[static_cast<std::size_t>(j) * chunk + e];
  };
  auto once = [&] {
    switch (op) {
      case model::OpClass::A2A:
        exchange(0, false);
        break;
      case model::OpClass::AllGather:
        exchange(0, true);
        break;
      case model::OpClass::ReduceScatter:
        exchange(0, false);
        reduce_into_mine();
        break;
      case model::OpClass::AllReduce:
        exchange(0, false);
        reduce_into_mine();
        exchange(1, true);
        break;
      default:
        requests.resize(2);
        check_mpi(MPI_Isend(send.data(), count, MPI_FLOAT, next, 2, MPI_COMM_WORLD, &requests[0]), "MPI_Isend");
        check_mpi(MPI_Irecv(recv.data(), count, MPI_FLOAT, previous, 2, MPI_COMM_WORLD, &requests[1]), "MPI_Irecv");
        wait_polled(2, requests.data());
        requests.clear();
    }
  };
  for (int i = 0; i < reps.warmup; ++i) once();
  std::vector<double> times;
  for (int i = 0; i < reps.timed; ++i) {
    check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    const Clock::time_point start = Clock::now();
    once();
    double mine = elapsed_ms(start), slowest = 0;
    // The collective ends when its last rank does.
    check_mpi(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    times.push_back(slowest);
  }
  return median(times);
}

// Whether these timings make the line the profile's fit will draw (cost::fit_line,
// the same function): a collective whose time falls as its size grows was
// disturbed while it was timed (another process took the core).
bool fits_a_line(const std::vector<model::TimingSample>& samples) {
  try {
    cost::fit_line(samples);
    return true;
  } catch (const Error&) {
    return false;
  }
}

void measure_collectives(const HostCalibrationOptions& o, HostCalibration& out) {
  const Repetitions reps = repetitions(o.quick);
  const std::pair<model::OpClass, const char*> ops[] = {{model::OpClass::A2A, "alltoall"},
                                                        {model::OpClass::AllGather, "allgather"},
                                                        {model::OpClass::ReduceScatter, "reducescatter"},
                                                        {model::OpClass::AllReduce, "allreduce"},
                                                        {model::OpClass::P2P, "p2p (sendrecv)"}};
  const std::vector<double> sizes = message_sizes(o.quick);
  for (const auto& [op, name] : ops) {
    const Clock::time_point start = Clock::now();
    // Every rank holds the same times (each is the slowest rank's), so all
    // ranks take the same decision to measure again, with no extra message.
    std::vector<model::TimingSample> timed;
    for (int attempt = 1;; ++attempt) {
      timed.clear();
      for (double size : sizes) {
        model::TimingSample t;
        t.op = op;
        t.link = model::LinkClass::Intra;
        t.group = out.world_size;
        t.size = size;
        t.time_ms = time_collective(op, size, out.world_size, out.rank, reps);
        timed.push_back(t);
      }
      if (fits_a_line(timed) || attempt == kCollectiveAttempts) break;
      if (out.rank == 0)
        progress(o, fmt::format("{}: time fell as the size grew (a disturbed run): measuring again ({} of {})", name,
                                attempt + 1, kCollectiveAttempts));
    }
    out.samples.insert(out.samples.end(), timed.begin(), timed.end());
    if (out.rank == 0)
      progress(o, fmt::format("{}: {} ranks, {} sizes {:.0f} .. {:.0f} bytes, median of {} after {} warm-up, {:.1f} s",
                              name, out.world_size, sizes.size(), sizes.front(), sizes.back(), reps.timed,
                              reps.warmup, elapsed_ms(start) / 1000.0));
  }
}

// The overlap measured with the real partner: rank 0 times the overlap GEMM
// while every rank's communication thread runs 2 MiB allreduces in a loop,
// each waited for by polling as the executor waits; before each one the ranks agree (MPI_MIN of a flag) whether rank 0 has
// finished, so all leave the loop together.
void measure_mpi_overlap(const HostCalibrationOptions& o, HostCalibration& out) {
  std::atomic<bool> stop{false};
  std::exception_ptr failure;
  std::thread comm([&] {
    try {
      const std::size_t count = std::size_t{1} << 19;  // floats: 2 MiB, the largest calibrated size
      std::vector<float> send(count, 1.0f), recv(count, 0.0f);
      for (;;) {
        int go = out.rank == 0 && stop ? 0 : 1, all = 0;
        check_mpi(MPI_Allreduce(&go, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
        if (all == 0) break;
        // Waited for as the executor waits (mpi_poll.hpp): the slow-down the
        // profile records is that of a polling communication thread.
        MPI_Request request;
        check_mpi(MPI_Iallreduce(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                                 MPI_COMM_WORLD, &request),
                  "MPI_Iallreduce");
        wait_polled(1, &request);
      }
    } catch (...) {
      failure = std::current_exception();
    }
  });
  if (out.rank == 0) {
    const Clock::time_point start = Clock::now();
    OverlapMeasurement m = out.overlap;  // the copy loop's: same GEMM, same alone median
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    m.with_ms = time_gemm(m.gemm, overlap_repetitions(o.quick));
    stop = true;
    m.partner = fmt::format("a 2 MiB MPI_Iallreduce loop (polled) over {} ranks on this rank's communication thread",
                            out.world_size);
    m.slowdown = std::max(1.0, m.with_ms / m.alone_ms);
    out.overlap_measurements.push_back(m);
    out.overlap = m;
    progress(o, fmt::format("overlap: GEMM beside a polled MPI_Iallreduce loop {:.4g} ms (alone {:.4g} ms), slowdown {:.4g}, "
                            "{:.1f} s",
                            m.with_ms, m.alone_ms, m.slowdown, elapsed_ms(start) / 1000.0));
  }
  comm.join();
  if (failure) std::rethrow_exception(failure);
}

// The converse of measure_mpi_overlap: a 2 MiB allreduce (the executor's way) timed alone, then
// while a thread of every rank runs the overlap GEMM in a loop, as the
// executor's compute streams do beside its communication streams. Made on the
// main thread; no other thread calls MPI meanwhile.
void measure_comm_overlap(const HostCalibrationOptions& o, HostCalibration& out) {
  const Clock::time_point start = Clock::now();
  const double size = 2.0 * 1024 * 1024;  // bytes: the largest calibrated size
  const Repetitions reps = overlap_repetitions(o.quick);
  CommOverlapMeasurement m;
  m.size_bytes = size;
  m.alone_ms = time_collective(model::OpClass::AllReduce, size, out.world_size, out.rank, reps);
  std::atomic<bool> stop{false};
  std::thread gemms([&] {
    HostGemm gemm(kOverlapGemm.tokens, kOverlapGemm.d_model, kOverlapGemm.ffn);  // rank 0 only measured compute
    while (!stop) gemm.run();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it start
  m.with_ms = time_collective(model::OpClass::AllReduce, size, out.world_size, out.rank, reps);
  stop = true;
  gemms.join();
  m.slowdown = std::max(1.0, m.with_ms / m.alone_ms);
  m.partner = fmt::format("GEMM {}x{}x{} in a loop on every rank's compute thread", kOverlapGemm.tokens,
                          kOverlapGemm.d_model, kOverlapGemm.ffn);
  if (out.rank == 0)
    progress(o, fmt::format("overlap: 2 MiB allreduce beside GEMMs {:.4g} ms (alone {:.4g} ms), slowdown {:.4g}, "
                            "{:.1f} s",
                            m.with_ms, m.alone_ms, m.slowdown, elapsed_ms(start) / 1000.0));
  out.comm_overlap = m;
}

void run_under_mpi(const HostCalibrationOptions& o, HostCalibration& out) {
  start_mpi_session();  // ended at exit: validate-hw --calibrate replays in the same session
  try {
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &out.world_size), "MPI_Comm_size");
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &out.rank), "MPI_Comm_rank");
    if (out.rank == 0) measure_compute(o, out);
    quiet_barrier();
    if (out.world_size > 1) {
      // Every MPI call of the collectives is made on this one communication
      // thread (the main thread waits for it).
      std::exception_ptr failure;
      measure_mpi_overlap(o, out);
      measure_comm_overlap(o, out);
      std::thread comm([&] {
        try {
          measure_collectives(o, out);
        } catch (...) {
          failure = std::current_exception();
        }
      });
      comm.join();
      if (failure) std::rethrow_exception(failure);
      out.collectives_measured = true;
    } else {
      out.note = "mpirun started 1 rank: no collective lines were measured (run under mpirun -n 2)";
    }
  } catch (const std::exception& e) {
    // One rank failing would leave the others waiting in a collective.
    std::cerr << "moeplan: error: rank " << out.rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
#endif

}  // namespace

HostCalibration run_host_calibration(const HostCalibrationOptions& o) {
  precise_sleeps();  // the executor's polls sleep as long, measured or replayed (mpi_poll.hpp)
  HostCalibration out;
#ifdef MOEPLAN_WITH_MPI
  out.mpi_built = true;
  if (launched_by_mpirun()) {
    run_under_mpi(o, out);
    return out;
  }
  out.note = "not started by mpirun: no collective lines were measured (run under mpirun -n 2)";
#else
  if (const char* size = std::getenv("OMPI_COMM_WORLD_SIZE"); size != nullptr && std::string(size) != "1")
    throw Error(ErrorKind::Runtime, fmt::format("started by mpirun with {} ranks, but this moeplan was built without "
                                                "MPI (MOEPLAN_WITH_MPI, libopenmpi-dev): every rank would measure alone",
                                                size));
  out.note = "built without MPI: no collective lines were measured (install libopenmpi-dev, rebuild, run under mpirun -n 2)";
#endif
  measure_compute(o, out);
  return out;
}

std::optional<model::GemmShapeModelSpec> calibrated_gemm_shape(const HostCalibration& c) {
  if (c.gemm_points.empty() || c.memory_bytes_per_s <= 0) return std::nullopt;
  model::GemmShapeModelSpec g;
  std::string kernel;
  if (c.gemm_units > 0) {
    g.units = c.gemm_units;
    g.tile_m = c.gemm_tile_m;
    g.tile_n = c.gemm_tile_n;
    kernel = fmt::format("{} SMs, cuBLAS tile taken as {} x {}", g.units, g.tile_m, g.tile_n);
  } else {
    g.units = 1;
    // Eigen's float GEBP micro-kernel computes an mr x nr block of C per step
    // (Eigen/src/Core/products/GeneralBlockPanelKernel.h: mr = 3 packets of
    // rows, nr = 4, or 8 with 32 vector registers): the tile a partial row or
    // column block rounds up to. Eigen's larger cache blocks (kc, mc, nc) do not
    // pad: their remainders run as smaller blocks.
    using Traits = Eigen::internal::gebp_traits<float, float>;
    g.tile_m = static_cast<std::int64_t>(Traits::mr);
    g.tile_n = static_cast<std::int64_t>(Traits::nr);
    kernel = fmt::format("1 core, Eigen float micro-kernel tile {} x {}", g.tile_m, g.tile_n);
  }
  g.memory_bytes_per_s = c.memory_bytes_per_s;
  g.peak_flops_per_s = cost::highest_tile_rate(g, c.gemm_points);
  g.provenance = model::Provenance::Measured;
  g = cost::fit_gemm_shape(g, c.gemm_points);
  std::string fp8;
  if (!c.gemm_points_fp8.empty()) {
    // The FP8 points' best tile rate, read as bf16 tiles at 1 FLOP/s (the
    // rate itself), is the FP8 peak; a full FP8 tile then reaches the same
    // share of it as a bf16 tile of the bf16 peak (the fitted efficiency).
    std::vector<cost::GemmPoint> as_rates = c.gemm_points_fp8;
    for (cost::GemmPoint& p : as_rates) p.shape.fp8 = false;
    g.peak_flops_per_s_fp8 = cost::highest_tile_rate(g, as_rates);
    fp8 = fmt::format(", FP8 peak = the best FP8 tile rate {:.4g} GFLOP/s of {} points", g.peak_flops_per_s_fp8 / 1e9,
                      c.gemm_points_fp8.size());
  }
  g.source = fmt::format(
      "least-squares fit of efficiency and alpha to {} of {} GEMM medians (moeplan calibrate, "
      "{} backend): {}, peak = the best measured tile rate {:.4g} GFLOP/s{}, memory = {} {:.4g} GB/s",
      g.points, c.gemm_points.size(), c.backend, kernel, g.peak_flops_per_s / 1e9, fp8,
      c.gemm_units > 0 ? "the largest bf16 -> FP8 cast" : "median 64 MiB copy", g.memory_bytes_per_s / 1e9);
  return g;
}

std::optional<model::AttentionShapeModelSpec> calibrated_attention_shape(const HostCalibration& c) {
  if (c.attention_points.empty()) return std::nullopt;
  MOEPLAN_CHECK(c.attention_block_rows > 0, "a calibration with attention points names its kernel's block");
  model::AttentionShapeModelSpec a = cost::fit_attention_shape(c.attention_block_rows, c.attention_points);
  a.source = fmt::format(
      "least-squares fit of alpha, matmul and score terms to {} attention-core medians (moeplan "
      "calibrate, {} backend): the executor's block-causal kernel, {} query rows per block",
      a.points, c.backend, a.block_rows);
  return a;
}

std::string points_csv(const HostCalibration& c) {
  std::string csv = fmt::format(
      "# moeplan calibrate, {} backend{}: medians of timed repetitions; sizes FLOPs (gemm, gemm_fp8, "
      "attention),\n# bytes moved (elementwise) or bytes as nccl-tests' size (collectives); times ms.\n",
      c.backend, c.device.empty() ? "" : " on " + c.device);
  for (const OverlapMeasurement& m : c.overlap_measurements)
    csv += fmt::format("# {}overlap slowdown {} = max(1, {} ms / {} ms): median of GEMM {}x{}x{} beside {} / alone\n",
                       m.partner == c.overlap.partner ? "overlap_compute_slowdown (profile): " : "", m.slowdown,
                       m.with_ms, m.alone_ms, m.gemm.tokens, m.gemm.d_model, m.gemm.ffn, m.partner);
  if (c.comm_overlap)
    csv += fmt::format("# overlap_comm_slowdown (profile): {} = max(1, {} ms / {} ms): median of a {} byte allreduce "
                       "beside {} / alone\n",
                       c.comm_overlap->slowdown, c.comm_overlap->with_ms, c.comm_overlap->alone_ms,
                       c.comm_overlap->size_bytes, c.comm_overlap->partner);
  if (!c.collectives_measured) csv += "# " + c.note + "\n";
  for (const cost::AttentionPoint& p : c.attention_points)
    csv += fmt::format("# attention point (queries, context, heads, head_dim, time_ms): {}, {}, {}, {}, {}\n",
                       p.queries, p.context, p.heads, p.head_dim, p.time_ms);
  for (const GroupedGemmPoint& p : c.grouped_points)
    csv += fmt::format("# grouped gemm (experts, tokens per expert, d_model, ffn, batched_ms, loop_ms): {}, {}, {}, {}, "
                       "{}, {}\n",
                       p.shape.experts, p.shape.per_expert.tokens, p.shape.per_expert.d_model, p.shape.per_expert.ffn,
                       p.batched_ms, p.loop_ms);
  csv += "op,link,group,size,time_ms\n";
  for (const model::TimingSample& s : c.samples)
    csv += fmt::format("{},{},{},{},{}\n", model::to_string(s.op),
                       s.link == model::LinkClass::Local ? "local" : model::to_string(s.link), s.group, s.size,
                       s.time_ms);
  return csv;
}

}  // namespace moeplan::calibrate
