// The GPU benchmarks of `moeplan calibrate --backend cuda` (cuda_bench.hpp):
// cuBLAS bf16 GEMMs, block-causal attention, NCCL collectives, and a GEMM
// beside copies or allreduces on a second stream. Timed with cudaEvents
// around every launch, after warm-up launches, as nccl-tests does.

#include <algorithm>
#include <cstring>
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

Bench::Bench(int device, const std::vector<GemmShape>& gemms) : impl_(std::make_unique<Impl>()) {
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
  m.copy_from = DeviceBuffer(kCopyBytes);
  m.copy_to = DeviceBuffer(kCopyBytes);
  check(cudaMemsetAsync(m.copy_from.get(), 1, kCopyBytes, m.stream), "cudaMemsetAsync");
  check(cudaStreamSynchronize(m.stream), "cudaStreamSynchronize");
}

Bench::~Bench() {
  Impl& m = *impl_;
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
