// execute --backend cuda: replays a task graph on this process's GPU. Every
// resource of the rank is a CUDA stream, every dependency an event the
// consumer's stream waits for, every compute task cuBLAS GEMMs (a batch of
// equal products in one launch) and attention of its ReplayPlan shape, every collective an NCCL collective over a
// communicator per group (under mpirun, one GPU per rank) or, with no peers,
// a device-to-device copy of the bytes the rank would send (the proxy).
// Launch order: issue_plan.hpp. Times: cudaEvents around every task, relative
// to an event every stream waits for at the start of the iteration.

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#ifdef MOEPLAN_WITH_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include "../../calibrate/cuda_ops.cuh"
#include "cuda_backend.hpp"
#include "issue_plan.hpp"

#include <moeplan/core/error.hpp>
#include <moeplan/hostrt/mpi_session.hpp>

namespace moeplan::exec {
namespace {

using cuda_ops::check;
using cuda_ops::DeviceBuffer;
using cuda_ops::elapsed_ms;
using cuda_ops::Event;


constexpr ncclDataType_t kBytes = ncclChar;

// MPI and NCCL for a run under mpirun: the world communicator, bootstrapped by
// broadcasting NCCL's id with MPI, and one communicator per distinct group of
// the plan, split from it in plan order (the same on every rank).
class Peers {
 public:
  Peers() = default;
  Peers(const Peers&) = delete;
  Peers& operator=(const Peers&) = delete;
  ~Peers() {
    for (auto& [members, comm] : groups_)
      if (comm != nullptr) ncclCommDestroy(comm);
    if (world_comm_ != nullptr) ncclCommDestroy(world_comm_);
  }

  int rank() const { return rank_; }
  int world() const { return world_; }

  void start(const ReplayPlan& plan) {
#ifdef MOEPLAN_WITH_MPI
    // One session with calibrate (validate-hw --calibrate); MPI ends at exit.
    if (!hostrt::start_mpi_session()) return;
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &world_), "MPI_Comm_size");
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    if (world_ == 1) return;
    if (world_ != plan.ranks)
      throw Error(ErrorKind::Input,
                  "mpirun started " + std::to_string(world_) + " ranks but the graph holds " +
                      std::to_string(plan.ranks) + "; start one process per rank of the graph",
                  "request.backend");
    ncclUniqueId id;
    if (rank_ == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    check_mpi(MPI_Bcast(id.internal, sizeof(id.internal), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
    check(ncclCommInitRank(&world_comm_, world_, id, rank_), "ncclCommInitRank");
    for (const ReplayTask& task : plan.tasks) {
      const CommWork* c = std::get_if<CommWork>(&task.work);
      if (c == nullptr || c->ranks.size() < 2 || groups_.count(c->ranks) != 0) continue;
      const bool member = std::find(c->ranks.begin(), c->ranks.end(), rank_) != c->ranks.end();
      ncclComm_t comm = nullptr;
      check(ncclCommSplit(world_comm_, member ? 0 : NCCL_SPLIT_NOCOLOR, rank_, &comm, nullptr), "ncclCommSplit");
      groups_.emplace(c->ranks, comm);
    }
#else
    (void)plan;
    if (const char* size = std::getenv("OMPI_COMM_WORLD_SIZE"); size != nullptr && std::string(size) != "1")
      throw Error(ErrorKind::Runtime, "started by mpirun, but this moeplan was built without MPI");
#endif
  }

  /// The group's communicator, or null when the collective is proxied.
  ncclComm_t comm(const CommWork& c) const {
    const auto it = groups_.find(c.ranks);
    return it == groups_.end() ? nullptr : it->second;
  }

  /// Earliest start and latest end of every task over the ranks, on rank 0.
  void combine(std::vector<double>& start, std::vector<double>& end) const {
#ifdef MOEPLAN_WITH_MPI
    if (world_ == 1) return;
    std::vector<double> s(start.size()), e(end.size());
    check_mpi(MPI_Reduce(start.data(), s.data(), static_cast<int>(s.size()), MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD),
              "MPI_Reduce");
    check_mpi(MPI_Reduce(end.data(), e.data(), static_cast<int>(e.size()), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD),
              "MPI_Reduce");
    start.swap(s);
    end.swap(e);
#else
    (void)start;
    (void)end;
#endif
  }

  void barrier() const {
#ifdef MOEPLAN_WITH_MPI
    if (world_ > 1) check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
  }

 private:
#ifdef MOEPLAN_WITH_MPI
  static void check_mpi(int status, const char* what) {
    if (status != MPI_SUCCESS) throw Error(ErrorKind::Runtime, std::string("MPI: ") + what + " failed");
  }
#endif
  int rank_ = 0;
  int world_ = 1;
  ncclComm_t world_comm_ = nullptr;
  std::map<std::vector<std::int32_t>, ncclComm_t> groups_;
};

// Buffers sized for the largest work of each kind in the plan.
struct Workspace {
  DeviceBuffer a, b, c;                   // GEMM operands (bf16)
  cuda_ops::AttentionShapeGpu attention;  // the largest of each dimension
  std::unique_ptr<cuda_ops::AttentionBuffers> attention_buffers;
  DeviceBuffer send, recv;  // collectives and the proxy's copies

  Workspace(const ReplayPlan& plan, const std::vector<cuda_plan::Launch>& launches, cudaStream_t stream) {
    std::size_t a_elems = 1, b_elems = 1, c_elems = 1, comm_bytes = 1;
    for (const cuda_plan::Launch& l : launches) {
      const ReplayTask& task = plan.tasks[l.task];
      if (const dag::WorkShape* w = std::get_if<dag::WorkShape>(&task.work)) {
        for (const dag::GemmBatch& g : w->gemms) {  // a batch's products side by side (one launch)
          a_elems = std::max(a_elems, static_cast<std::size_t>(g.count * g.m * g.k));
          b_elems = std::max(b_elems, static_cast<std::size_t>(g.count * g.k * g.n));
          c_elems = std::max(c_elems, static_cast<std::size_t>(g.count * g.m * g.n));
        }
        if (const auto& a = w->attention) {
          attention.queries = std::max(attention.queries, a->queries);
          attention.context = std::max(attention.context, a->context);
          attention.heads = std::max(attention.heads, a->heads);
          attention.head_dim = std::max(attention.head_dim, a->head_dim);
        }
      } else {
        const CommWork& c = std::get<CommWork>(task.work);
        // The proxy copies up to 2 (n - 1) / n of the size (allreduce): room for both.
        const double bytes = std::max({c.size_bytes, cuda_plan::proxy_copy_bytes(c), 0.0});
        comm_bytes = std::max(comm_bytes, static_cast<std::size_t>(bytes) + 16);
      }
    }
    a = DeviceBuffer(a_elems * 2);
    b = DeviceBuffer(b_elems * 2);
    c = DeviceBuffer(c_elems * 2);
    cuda_ops::fill_bf16(a.as<__nv_bfloat16>(), a_elems, stream);
    cuda_ops::fill_bf16(b.as<__nv_bfloat16>(), b_elems, stream);
    if (attention.queries > 0) {
      attention_buffers = std::make_unique<cuda_ops::AttentionBuffers>(attention);
      for (DeviceBuffer* d : {&attention_buffers->q, &attention_buffers->k, &attention_buffers->v})
        cuda_ops::fill_bf16(d->as<__nv_bfloat16>(), d->bytes() / 2, stream);
    }
    send = DeviceBuffer(comm_bytes);
    recv = DeviceBuffer(comm_bytes);
    check(cudaMemsetAsync(send.get(), 0, comm_bytes, stream), "cudaMemsetAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
};

class CudaBackend final : public Backend {
 public:
  const char* name() const override { return "cuda"; }

  MeasuredRun run(const dag::TaskGraph& graph, const ReplayPlan& plan, const ExecuteOptions& options) override {
    if (plan.tasks.size() != graph.size())
      throw Error(ErrorKind::Runtime, "cuda backend: the replay plan does not match the graph");
    int devices = 0;
    const cudaError_t status = cudaGetDeviceCount(&devices);
    if (status != cudaSuccess || devices == 0)
      throw Error(ErrorKind::Runtime,
                  std::string("no CUDA GPU found (cudaGetDeviceCount: ") +
                      (status != cudaSuccess ? cudaGetErrorString(status) : "0 devices") + ")",
                  "request.backend");
    Peers peers;
    peers.start(plan);
    if (peers.world() == 1 && plan.ranks > 1)
      throw Error(ErrorKind::Input,
                  "the graph holds " + std::to_string(plan.ranks) +
                      " ranks: one process replays a symmetric graph (1 rank); run under mpirun with one process "
                      "per rank",
                  "request.backend");
    check(cudaSetDevice(peers.rank() % devices), "cudaSetDevice");
    const cuda_plan::IssuePlan issue = cuda_plan::make_issue_plan(graph, peers.rank());
    return Replay(graph, plan, issue, peers).run(options);
  }

 private:
  class Replay {
   public:
    Replay(const dag::TaskGraph& g, const ReplayPlan& plan, const cuda_plan::IssuePlan& issue, const Peers& peers)
        : g_(g),
          plan_(plan),
          issue_(issue),
          peers_(peers),
          streams_(issue.streams.size(), nullptr),
          starts_(g.size()),
          ends_(g.size()),
          proxied_(g.size(), false) {
      for (cudaStream_t& s : streams_) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cudaStreamCreateWithFlags(&origin_, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cublasCreate(&cublas_), "cublasCreate");
      workspace_ = std::make_unique<Workspace>(plan, issue.launches, origin_);
    }
    ~Replay() {
      workspace_.reset();
      if (cublas_ != nullptr) cublasDestroy(cublas_);
      for (cudaStream_t s : streams_)
        if (s != nullptr) cudaStreamDestroy(s);
      if (origin_ != nullptr) cudaStreamDestroy(origin_);
    }
    Replay(const Replay&) = delete;
    Replay& operator=(const Replay&) = delete;

    MeasuredRun run(const ExecuteOptions& options) {
      MeasuredRun out;
      std::vector<std::vector<double>> starts, ends;
      for (int i = 0; i < options.warmup_iterations + options.iterations; ++i) {
        peers_.barrier();
        iteration();
        std::vector<double> s(g_.size(), std::numeric_limits<double>::max()), e(g_.size(), 0.0);
        for (const cuda_plan::Launch& l : issue_.launches) {
          s[l.task] = elapsed_ms(iteration_start_, starts_[l.task]);
          e[l.task] = elapsed_ms(iteration_start_, ends_[l.task]);
        }
        peers_.combine(s, e);
        if (i < options.warmup_iterations) continue;
        const double ms = e.empty() ? 0.0 : *std::max_element(e.begin(), e.end());
        out.iteration_ms.push_back(ms);
        starts.push_back(std::move(s));
        ends.push_back(std::move(e));
        if (options.progress != nullptr && peers_.rank() == 0)
          *options.progress << "moeplan execute: cuda iteration " << out.iteration_ms.size() << " of "
                            << options.iterations << ": " << ms << " ms" << std::endl;
      }
      out.complete = peers_.rank() == 0;
      out.proxied = proxied_;
      if (std::find(proxied_.begin(), proxied_.end(), true) != proxied_.end())
        out.proxy_note =
            "no peer GPU for these collectives: each was replayed as a device-to-device copy of the "
            "bytes the rank would send (size x nccl-tests' bus-bandwidth factor) on its communication "
            "stream, occupying the copy engines and memory bandwidth as the collective would";
      if (out.iteration_ms.empty() || !out.complete) return out;
      // The median iteration (the lower middle one for an even count).
      std::vector<std::size_t> order(out.iteration_ms.size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
        return out.iteration_ms[x] != out.iteration_ms[y] ? out.iteration_ms[x] < out.iteration_ms[y] : x < y;
      });
      const std::size_t median = order[(order.size() - 1) / 2];
      sim::Timeline& tl = out.timeline;
      tl.start_ms = starts[median];
      tl.end_ms = ends[median];
      for (double& v : tl.start_ms)
        if (v == std::numeric_limits<double>::max()) v = 0;  // no rank replays the task (no resource)
      tl.makespan_ms = out.iteration_ms[median];
      std::vector<dag::TaskId> by_start(g_.size());
      std::iota(by_start.begin(), by_start.end(), dag::TaskId{0});
      std::sort(by_start.begin(), by_start.end(), [&](dag::TaskId x, dag::TaskId y) {
        return tl.start_ms[x] != tl.start_ms[y] ? tl.start_ms[x] < tl.start_ms[y] : x < y;
      });
      tl.start_order.assign(g_.size(), 0);
      for (std::uint32_t i = 0; i < by_start.size(); ++i) tl.start_order[by_start[i]] = i;
      return out;
    }

   private:
    void iteration() {
      check(cudaEventRecord(iteration_start_.get(), origin_), "cudaEventRecord");
      for (cudaStream_t s : streams_) check(cudaStreamWaitEvent(s, iteration_start_.get(), 0), "cudaStreamWaitEvent");
      for (const cuda_plan::Launch& l : issue_.launches) {
        cudaStream_t s = streams_[l.stream];
        for (dag::TaskId w : l.waits) check(cudaStreamWaitEvent(s, ends_[w].get(), 0), "cudaStreamWaitEvent");
        check(cudaEventRecord(starts_[l.task].get(), s), "cudaEventRecord");
        launch(l.task, s);
        check(cudaEventRecord(ends_[l.task].get(), s), "cudaEventRecord");
      }
      for (cudaStream_t s : streams_) check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    }

    void launch(dag::TaskId t, cudaStream_t s) {
      Workspace& w = *workspace_;
      const ReplayTask& task = plan_.tasks[t];
      if (const dag::WorkShape* work = std::get_if<dag::WorkShape>(&task.work)) {
        check(cublasSetStream(cublas_, s), "cublasSetStream");
        // A batch of equal products (a rank's local experts) is one launch, as
        // Megatron-Core's grouped GEMM: a loop of launches ran 1.8-5.8x slower on
        // small experts (docs/validation.md, "GPU runs"), a cost no model prices.
        for (const dag::GemmBatch& g : work->gemms)
          cuda_ops::gemm_bf16_batched(cublas_, g.m, g.n, g.k, g.count, w.a.as<__nv_bfloat16>(),
                                      w.b.as<__nv_bfloat16>(), w.c.as<__nv_bfloat16>());
        if (const auto& a = work->attention; a && a->queries > 0)
          cuda_ops::attention_bf16(cublas_, s, {a->queries, a->context, a->heads, a->head_dim}, *w.attention_buffers);
      } else {
        communicate(t, std::get<CommWork>(task.work), s);
      }
    }

    void communicate(dag::TaskId t, const CommWork& c, cudaStream_t s) {
      Workspace& w = *workspace_;
      const ncclComm_t comm = peers_.comm(c);
      if (comm == nullptr) {
        const double bytes = cuda_plan::proxy_copy_bytes(c);
        if (bytes <= 0) return;  // a group of one moves nothing
        proxied_[t] = true;
        check(cudaMemcpyAsync(w.recv.get(), w.send.get(), static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice, s),
              "cudaMemcpyAsync (proxy)");
        return;
      }
      // Bytes as nccl-tests' size (the cost model's): see cost::bus_factor.
      const std::size_t n = static_cast<std::size_t>(c.ranks.size());
      const std::size_t size = static_cast<std::size_t>(c.size_bytes);
      const std::size_t chunk = size / n;
      char* send = w.send.as<char>();
      char* recv = w.recv.as<char>();
      switch (c.op) {
        case model::OpClass::A2A:
          check(ncclGroupStart(), "ncclGroupStart");
          for (std::size_t peer = 0; peer < n; ++peer) {
            check(ncclSend(send + peer * chunk, chunk, kBytes, static_cast<int>(peer), comm, s), "ncclSend");
            check(ncclRecv(recv + peer * chunk, chunk, kBytes, static_cast<int>(peer), comm, s), "ncclRecv");
          }
          check(ncclGroupEnd(), "ncclGroupEnd");
          break;
        case model::OpClass::AllGather:
          check(ncclAllGather(send, recv, chunk, kBytes, comm, s), "ncclAllGather");
          break;
        case model::OpClass::ReduceScatter:
          check(ncclReduceScatter(send, recv, chunk / 2, ncclBfloat16, ncclSum, comm, s), "ncclReduceScatter");
          break;
        case model::OpClass::AllReduce:
          check(ncclAllReduce(send, recv, size / 2, ncclBfloat16, ncclSum, comm, s), "ncclAllReduce");
          break;
        default: {  // P2P: {sender, receiver}; the split communicator ranks them by world rank
          const int sender_in_comm = c.ranks[0] < c.ranks[1] ? 0 : 1;
          if (peers_.rank() == c.ranks[0])
            check(ncclSend(send, size, kBytes, 1 - sender_in_comm, comm, s), "ncclSend");
          else
            check(ncclRecv(recv, size, kBytes, sender_in_comm, comm, s), "ncclRecv");
        }
      }
    }

    const dag::TaskGraph& g_;
    const ReplayPlan& plan_;
    const cuda_plan::IssuePlan& issue_;
    const Peers& peers_;
    std::vector<cudaStream_t> streams_;
    cudaStream_t origin_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    std::unique_ptr<Workspace> workspace_;
    Event iteration_start_;
    std::vector<Event> starts_, ends_;
    std::vector<bool> proxied_;
  };
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace moeplan::exec
