// The GPU benchmarks of `moeplan calibrate --backend cuda` (cuda_bench.hpp):
// cuBLAS bf16 GEMMs, block-causal attention, NCCL collectives, and a GEMM
// beside copies or allreduces on a second stream. Timed with cudaEvents
// around every launch, after warm-up launches, as nccl-tests does.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuda_bench.hpp"
#include "cuda_ops.cuh"

#include <moeplan/core/error.hpp>

namespace moeplan::calibrate::gpu {

using cuda_ops::check;
using cuda_ops::DeviceBuffer;
using cuda_ops::elapsed_ms;
using cuda_ops::Event;

int device_count(std::string& why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
    return 0;
  }
  if (count == 0) why = "cudaGetDeviceCount: 0 devices";
  return count;
}

UniqueId nccl_unique_id() {
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  UniqueId bytes{};
  static_assert(sizeof(id.internal) == bytes.size(), "ncclUniqueId is 128 bytes");
  std::memcpy(bytes.data(), id.internal, bytes.size());
  return bytes;
}

namespace {


std::size_t elements(std::int64_t a, std::int64_t b) {
  return static_cast<std::size_t>(a) * static_cast<std::size_t>(b);
}

// The largest message of message_sizes(false) (64 MiB) and the partners' buffers.
constexpr std::size_t kCollectiveBytes = std::size_t{64} << 20;
constexpr std::size_t kCopyBytes = std::size_t{256} << 20;

}  // namespace

struct Bench::Impl {
  int device = 0;
  cudaStream_t stream = nullptr;  // timed work
  cudaStream_t side = nullptr;    // the partner
  cublasHandle_t cublas = nullptr;
  ncclComm_t comm = nullptr;
  int world = 1;
  int rank = 0;
  DeviceBuffer a, b, c;             // GEMM operands, sized for the largest shape
  DeviceBuffer a8, b8;              // the same in FP8
  DeviceBuffer ga, gb, gc;          // grouped GEMM operands, every expert's
  DeviceBuffer cast_in, cast_out;   // the bf16 -> FP8 cast
  std::unique_ptr<cuda_ops::Fp8Gemm> fp8;
  DeviceBuffer send, recv;          // collectives
  DeviceBuffer copy_from, copy_to;  // the copy partner

  // Per-repetition times of launch() on `stream`.
  template <typename Launch>
  std::vector<double> time(const Repetitions& reps, Launch&& launch) {
    for (int i = 0; i < reps.warmup; ++i) launch();
    std::vector<Event> marks(static_cast<std::size_t>(reps.timed) + 1);
    check(cudaEventRecord(marks[0].get(), stream), "cudaEventRecord");
    for (int i = 0; i < reps.timed; ++i) {
      launch();
      check(cudaEventRecord(marks[static_cast<std::size_t>(i) + 1].get(), stream), "cudaEventRecord");
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::vector<double> ms;
    for (int i = 0; i < reps.timed; ++i)
      ms.push_back(elapsed_ms(marks[static_cast<std::size_t>(i)], marks[static_cast<std::size_t>(i) + 1]));
    return ms;
  }

  void gemm(const GemmShape& s) {
    cuda_ops::gemm_bf16(cublas, s.tokens, s.ffn, s.d_model, a.as<__nv_bfloat16>(), b.as<__nv_bfloat16>(),
                        c.as<__nv_bfloat16>());
  }

  // Partner work, then GEMMs once the first partner op has ended.
  template <typename Partner>
  Beside beside(const GemmShape* g, const Repetitions& reps, int count, Partner&& partner) {
    Event first, last;
    partner();
    check(cudaEventRecord(first.get(), side), "cudaEventRecord");
    for (int i = 1; i < count; ++i) partner();
    check(cudaEventRecord(last.get(), side), "cudaEventRecord");
    Beside out;
    Event gemm_end;
    if (g != nullptr) {
      check(cudaStreamWaitEvent(stream, first.get(), 0), "cudaStreamWaitEvent");
      out.gemm_ms = time(reps, [&] { gemm(*g); });
      // time() has waited for the GEMMs: recorded now, before the partner is
      // waited for, this event marks their end (recorded after the wait, as it
      // once was, it came after the partner's end every time and the check
      // below could never pass: seen on an H200, 2026-11-26).
      check(cudaEventRecord(gemm_end.get(), stream), "cudaEventRecord");
    }
    check(cudaStreamSynchronize(side), "cudaStreamSynchronize");
    if (g != nullptr) {
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      out.covered = elapsed_ms(gemm_end, last) >= 0;  // the partner ended after the last GEMM
    } else {
      out.covered = true;
    }
    return out;
  }
};

Bench::Bench(int device, const std::vector<GemmShape>& gemms, const std::vector<GroupedGemmShape>& grouped,
             std::size_t cast_elements)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.device = device;
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cudaStreamCreateWithFlags(&m.side, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cublasCreate(&m.cublas), "cublasCreate");
  check(cublasSetStream(m.cublas, m.stream), "cublasSetStream");
  std::size_t a_elems = 1, b_elems = 1, c_elems = 1;
  for (const GemmShape& s : gemms) {
    a_elems = std::max(a_elems, elements(s.tokens, s.d_model));
    b_elems = std::max(b_elems, elements(s.d_model, s.ffn));
    c_elems = std::max(c_elems, elements(s.tokens, s.ffn));
  }
  m.a = DeviceBuffer(a_elems * 2);
  m.b = DeviceBuffer(b_elems * 2);
  m.c = DeviceBuffer(c_elems * 2);
  cuda_ops::fill_bf16(m.a.as<__nv_bfloat16>(), a_elems, m.stream);
  cuda_ops::fill_bf16(m.b.as<__nv_bfloat16>(), b_elems, m.stream);
  m.a8 = DeviceBuffer(a_elems);
  m.b8 = DeviceBuffer(b_elems);
  cuda_ops::fill_fp8(m.a8.as<__nv_fp8_e4m3>(), a_elems, m.stream);
  cuda_ops::fill_fp8(m.b8.as<__nv_fp8_e4m3>(), b_elems, m.stream);
  m.fp8 = std::make_unique<cuda_ops::Fp8Gemm>();
  std::size_t ga = 1, gb = 1, gc = 1;
  for (const GroupedGemmShape& g : grouped) {
    const std::size_t e = static_cast<std::size_t>(g.experts);
    ga = std::max(ga, e * elements(g.per_expert.tokens, g.per_expert.d_model));
    gb = std::max(gb, e * elements(g.per_expert.d_model, g.per_expert.ffn));
    gc = std::max(gc, e * elements(g.per_expert.tokens, g.per_expert.ffn));
  }
  m.ga = DeviceBuffer(ga * 2);
  m.gb = DeviceBuffer(gb * 2);
  m.gc = DeviceBuffer(gc * 2);
  cuda_ops::fill_bf16(m.ga.as<__nv_bfloat16>(), ga, m.stream);
  cuda_ops::fill_bf16(m.gb.as<__nv_bfloat16>(), gb, m.stream);
  const std::size_t cast = std::max<std::size_t>(cast_elements, 8);
  m.cast_in = DeviceBuffer(cast * 2);
  m.cast_out = DeviceBuffer(cast);
  cuda_ops::fill_bf16(m.cast_in.as<__nv_bfloat16>(), cast, m.stream);
  m.copy_from = DeviceBuffer(kCopyBytes);
  m.copy_to = DeviceBuffer(kCopyBytes);
  check(cudaMemsetAsync(m.copy_from.get(), 1, kCopyBytes, m.stream), "cudaMemsetAsync");
  check(cudaStreamSynchronize(m.stream), "cudaStreamSynchronize");
}

Bench::~Bench() {
  Impl& m = *impl_;
  m.fp8.reset();
  if (m.comm != nullptr) ncclCommDestroy(m.comm);
  if (m.cublas != nullptr) cublasDestroy(m.cublas);
  if (m.stream != nullptr) cudaStreamDestroy(m.stream);
  if (m.side != nullptr) cudaStreamDestroy(m.side);
}

std::string Bench::device_name() const {
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, impl_->device), "cudaGetDeviceProperties");
  return std::string(prop.name) + ", " + std::to_string(prop.multiProcessorCount) + " SMs";
}

int Bench::sm_count() const {
  int count = 0;
  check(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, impl_->device), "cudaDeviceGetAttribute");
  return count;
}

void Bench::warm_up(const GemmShape& s, double seconds) {
  Impl& m = *impl_;
  const double one = median(m.time(Repetitions{1, 5}, [&] { m.gemm(s); }));
  const int count = static_cast<int>(std::min(1e5, std::ceil(seconds * 1e3 / std::max(one, 1e-3))));
  for (int i = 0; i < count; ++i) m.gemm(s);
  check(cudaStreamSynchronize(m.stream), "cudaStreamSynchronize");
}

std::vector<double> Bench::gemm_fp8_ms(const GemmShape& s, const Repetitions& reps) {
  Impl& m = *impl_;
  return m.time(reps, [&] {
    m.fp8->run(s.tokens, s.ffn, s.d_model, m.a8.as<__nv_fp8_e4m3>(), m.b8.as<__nv_fp8_e4m3>(), m.c.as<__nv_bfloat16>(),
               m.stream);
  });
}

std::vector<double> Bench::grouped_gemm_ms(const GemmShape& s, int experts, bool batched, const Repetitions& reps) {
  Impl& m = *impl_;
  const auto* a = m.ga.as<__nv_bfloat16>();
  const auto* b = m.gb.as<__nv_bfloat16>();
  auto* c = m.gc.as<__nv_bfloat16>();
  return m.time(reps, [&] {
    if (batched) {
      cuda_ops::gemm_bf16_batched(m.cublas, s.tokens, s.ffn, s.d_model, experts, a, b, c);
      return;
    }
    for (int e = 0; e < experts; ++e)
      cuda_ops::gemm_bf16(m.cublas, s.tokens, s.ffn, s.d_model, a + e * elements(s.tokens, s.d_model),
                          b + e * elements(s.d_model, s.ffn), c + e * elements(s.tokens, s.ffn));
  });
}

std::vector<double> Bench::cast_ms(std::size_t count, const Repetitions& reps) {
  Impl& m = *impl_;
  if (count * 2 > m.cast_in.bytes()) throw Error(ErrorKind::Runtime, "cast: more elements than the buffer holds");
  return m.time(reps, [&] {
    cuda_ops::cast_bf16_to_fp8(m.cast_in.as<__nv_bfloat16>(), m.cast_out.as<__nv_fp8_e4m3>(), count, 0.5f, m.stream);
  });
}

double Bench::sm_copy_ms(std::size_t bytes, int blocks) {
  Impl& m = *impl_;
  const std::size_t n = std::min(bytes, kCopyBytes);
  return median(m.time(Repetitions{1, 5}, [&] {
    cuda_ops::copy_on_blocks(m.copy_from.get(), m.copy_to.get(), n, blocks, m.stream);
  }));
}

Beside Bench::gemm_beside_sm_copies(const GemmShape& g, const Repetitions& reps, int count, std::size_t bytes,
                                    int blocks) {
  Impl& m = *impl_;
  const std::size_t n = std::min(bytes, kCopyBytes);
  return m.beside(&g, reps, count, [&] { cuda_ops::copy_on_blocks(m.copy_from.get(), m.copy_to.get(), n, blocks, m.side); });
}

std::vector<double> Bench::gemm_ms(const GemmShape& s, const Repetitions& reps) {
  return impl_->time(reps, [&] { impl_->gemm(s); });
}

std::vector<double> Bench::attention_ms(const AttentionShape& s, const Repetitions& reps) {
  const cuda_ops::AttentionShapeGpu shape{s.seq_len, s.seq_len, s.heads, s.head_dim};
  cuda_ops::AttentionBuffers buffers(shape);
  for (DeviceBuffer* d : {&buffers.q, &buffers.k, &buffers.v})
    cuda_ops::fill_bf16(d->as<__nv_bfloat16>(), d->bytes() / 2, impl_->stream);
  return impl_->time(reps, [&] { cuda_ops::attention_bf16(impl_->cublas, impl_->stream, shape, buffers); });
}

void Bench::init_nccl(const UniqueId& bytes, int world, int rank) {
  Impl& m = *impl_;
  ncclUniqueId id;
  std::memcpy(id.internal, bytes.data(), bytes.size());
  check(ncclCommInitRank(&m.comm, world, id, rank), "ncclCommInitRank");
  m.world = world;
  m.rank = rank;
  m.send = DeviceBuffer(kCollectiveBytes);
  m.recv = DeviceBuffer(kCollectiveBytes);
  check(cudaMemsetAsync(m.send.get(), 0, kCollectiveBytes, m.stream), "cudaMemsetAsync");
  check(cudaStreamSynchronize(m.stream), "cudaStreamSynchronize");
}

std::vector<double> Bench::collective_ms(model::OpClass op, double size_bytes, const Repetitions& reps) {
  Impl& m = *impl_;
  if (m.comm == nullptr) throw Error(ErrorKind::Runtime, "NCCL: collective before init_nccl");
  const std::size_t count = static_cast<std::size_t>(size_bytes) / sizeof(float);
  if (count * sizeof(float) > kCollectiveBytes)
    throw Error(ErrorKind::Runtime, "NCCL: message larger than the benchmark's 64 MiB buffers");
  const std::size_t chunk = count / static_cast<std::size_t>(m.world);
  float* send = m.send.as<float>();
  float* recv = m.recv.as<float>();
  const int next = (m.rank + 1) % m.world;
  const int previous = (m.rank + m.world - 1) % m.world;
  auto once = [&] {
    switch (op) {
      case model::OpClass::A2A:
        check(ncclGroupStart(), "ncclGroupStart");
        for (int peer = 0; peer < m.world; ++peer) {
          const std::size_t at = static_cast<std::size_t>(peer) * chunk;
          check(ncclSend(send + at, chunk, ncclFloat, peer, m.comm, m.stream), "ncclSend");
          check(ncclRecv(recv + at, chunk, ncclFloat, peer, m.comm, m.stream), "ncclRecv");
        }
        check(ncclGroupEnd(), "ncclGroupEnd");
        break;
      case model::OpClass::AllGather:
        check(ncclAllGather(send, recv, chunk, ncclFloat, m.comm, m.stream), "ncclAllGather");
        break;
      case model::OpClass::ReduceScatter:
        check(ncclReduceScatter(send, recv, chunk, ncclFloat, ncclSum, m.comm, m.stream), "ncclReduceScatter");
        break;
      case model::OpClass::AllReduce:
        check(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, m.comm, m.stream), "ncclAllReduce");
        break;
      case model::OpClass::P2P:
        check(ncclGroupStart(), "ncclGroupStart");
        check(ncclSend(send, count, ncclFloat, next, m.comm, m.stream), "ncclSend");
        check(ncclRecv(recv, count, ncclFloat, previous, m.comm, m.stream), "ncclRecv");
        check(ncclGroupEnd(), "ncclGroupEnd");
        break;
      default:
        throw Error(ErrorKind::Runtime, "NCCL: not a collective");
    }
  };
  return m.time(reps, once);
}

double Bench::copy_ms(std::size_t bytes) {
  Impl& m = *impl_;
  const std::size_t n = std::min(bytes, kCopyBytes);
  return median(m.time(Repetitions{1, 5}, [&] {
    check(cudaMemcpyAsync(m.copy_to.get(), m.copy_from.get(), n, cudaMemcpyDeviceToDevice, m.stream),
          "cudaMemcpyAsync");
  }));
}

double Bench::allreduce_ms(std::size_t bytes) {
  return median(collective_ms(model::OpClass::AllReduce, static_cast<double>(bytes), Repetitions{1, 5}));
}

Beside Bench::gemm_beside_copies(const GemmShape& g, const Repetitions& reps, int count, std::size_t bytes) {
  Impl& m = *impl_;
  const std::size_t n = std::min(bytes, kCopyBytes);
  return m.beside(&g, reps, count, [&] {
    check(cudaMemcpyAsync(m.copy_to.get(), m.copy_from.get(), n, cudaMemcpyDeviceToDevice, m.side), "cudaMemcpyAsync");
  });
}

Beside Bench::gemm_beside_allreduce(const GemmShape* g, const Repetitions& reps, int count, std::size_t bytes) {
  Impl& m = *impl_;
  if (m.comm == nullptr) throw Error(ErrorKind::Runtime, "NCCL: allreduce partner before init_nccl");
  const std::size_t n = std::min(bytes, kCollectiveBytes) / sizeof(float);
  return m.beside(g, reps, count, [&] {
    check(ncclAllReduce(m.send.get(), m.recv.get(), n, ncclFloat, ncclSum, m.comm, m.side), "ncclAllReduce");
  });
}

}  // namespace moeplan::calibrate::gpu
