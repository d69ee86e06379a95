#include "host_backend.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <thread>

#include <fmt/format.h>

#ifdef MOEPLAN_WITH_MPI
// The C API only: Open MPI's deprecated C++ bindings do not compile warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include <moeplan/core/error.hpp>
#include <moeplan/hostrt/host_kernels.hpp>
#include <moeplan/hostrt/mpi_poll.hpp>
#include <moeplan/hostrt/mpi_session.hpp>

#include "host_mailbox.hpp"
#include "replay_scheduler.hpp"

namespace moeplan::exec {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// ---------------------------------------------------------------------------
// Processes: which owns a rank, and the MPI plumbing (absent without MPI).

struct World {
  int size = 1;
  int me = 0;
  bool mpi = false;
  int owner(std::int32_t rank) const { return rank % size; }
};

#ifdef MOEPLAN_WITH_MPI
using hostrt::check_mpi;  // hostrt/mpi_poll.hpp

// Control messages (process 0 <-> the others) and collective bytes on
// communicators of their own, so that their tags never meet.
struct MpiComms {
  MPI_Comm control = MPI_COMM_NULL;
  MPI_Comm data = MPI_COMM_NULL;
  int tag_ub = 32767;  // the standard's minimum; MPI_TAG_UB says more
};

// Waits for every process without spinning (the others' threads compute meanwhile).
void quiet_barrier(MPI_Comm comm) {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(comm, &request), "MPI_Ibarrier");
  for (int done = 0; !done;) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!done) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

#endif

// ---------------------------------------------------------------------------
// A reusable barrier of the members of one collective that live in this
// process; abortable, so that a stalled iteration can end.

class LocalBarrier {
 public:
  explicit LocalBarrier(int parties) : parties_(parties) {}
  // false when aborted
  bool arrive_and_wait(const std::atomic<bool>& abort) {
    std::unique_lock lock(mutex_);
    const std::uint64_t generation = generation_;
    if (++arrived_ == parties_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return true;
    }
    cv_.wait(lock, [&] { return generation_ != generation || abort.load(); });
    return generation_ != generation;
  }
  void wake() {
    std::lock_guard lock(mutex_);
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int parties_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
};

// ---------------------------------------------------------------------------

struct Part {  // one member's part of a task, as measured
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
};

class HostBackend final : public Backend {
 public:
  ~HostBackend() override;
  const char* name() const override { return "host"; }
  MeasuredRun run(const dag::TaskGraph& graph, const ReplayPlan& plan, const ExecuteOptions& options) override;

 private:
  World start_world();
#ifdef MOEPLAN_WITH_MPI
  MpiComms comms_;  // made on the first run under mpirun
#endif
};

// One run of one graph: the threads, buffers and kernels of this process.
class Replay {
 public:
  Replay(const dag::TaskGraph& graph, const ReplayPlan& plan, const World& world
#ifdef MOEPLAN_WITH_MPI
         ,
         const MpiComms& comms
#endif
  );
  /// One iteration; on process 0, each task's (start, end) in ns from t0.
  std::vector<Part> iterate();

 private:
  bool owns(dag::ResourceId r) const { return world_.owner(graph_.resources()[r].rank) == world_.me; }
  void prepare();
  void executor(dag::ResourceId r, std::size_t expected);
  void run_part(dag::ResourceId r, dag::TaskId t);
  void exchange(dag::ResourceId r, dag::TaskId t);
  void dispatch(const std::vector<Assignment>& assignments);
  void report(dag::ResourceId r, dag::TaskId t, Part part);
  void fail(std::exception_ptr e);
  std::vector<float>& buffer(dag::ResourceId r, dag::TaskId t, int which);

  const dag::TaskGraph& graph_;
  const ReplayPlan& plan_;
  World world_;
#ifdef MOEPLAN_WITH_MPI
  const MpiComms& comms_;
#endif
  // Kernels per task, shared by the tasks of one resource with one shape
  // (a resource runs one task at a time).
  std::vector<std::vector<hostrt::HostGemm*>> gemms_;  // a compute task's GEMMs, in order
  std::vector<hostrt::HostAttention*> attentions_;     // its attention core, run after them (or none)
  std::map<std::tuple<dag::ResourceId, std::int64_t, std::int64_t, std::int64_t, std::int64_t>,
           std::unique_ptr<hostrt::HostGemm>>
      gemm_kernels_;
  std::map<std::tuple<dag::ResourceId, std::int64_t, std::int64_t, std::int64_t, std::int64_t>,
           std::unique_ptr<hostrt::HostAttention>>
      attention_kernels_;
  std::vector<std::unique_ptr<LocalBarrier>> barriers_;  // per collective with local members
  std::map<std::pair<std::int64_t, int>, std::vector<float>> buffers_;  // (resource or -1-task, send/recv)
  std::vector<std::size_t> expected_;  // per resource: assignments per iteration (owned resources)
#ifdef MOEPLAN_WITH_MPI
  std::unique_ptr<HostMailboxes> mailboxes_;  // control messages between processes (under mpirun)
#endif

  // Per iteration.
  std::int64_t t0_ns_ = 0;
  struct Slot {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<dag::TaskId> queue;
  };
  std::vector<std::unique_ptr<Slot>> slots_;
  std::mutex scheduler_mutex_;
  std::condition_variable scheduler_cv_;
  std::optional<ReplayScheduler> scheduler_;
  std::vector<Part> times_;  // process 0: per task, merged over members
  std::atomic<bool> abort_{false};
  std::exception_ptr failure_;
  std::string stall_;
};

Replay::Replay(const dag::TaskGraph& graph, const ReplayPlan& plan, const World& world
#ifdef MOEPLAN_WITH_MPI
               ,
               const MpiComms& comms
#endif
               )
    : graph_(graph), plan_(plan), world_(world)
#ifdef MOEPLAN_WITH_MPI
      ,
      comms_(comms)
#endif
{
  prepare();
}

std::vector<float>& Replay::buffer(dag::ResourceId r, dag::TaskId t, int which) {
  // One pair per resource that runs one task at a time; one pair per task on Shared links.
  const bool shared = graph_.resources()[r].policy == dag::DispatchPolicy::Shared;
  return buffers_.at({shared ? -1 - static_cast<std::int64_t>(t) : static_cast<std::int64_t>(r), which});
}

// Floats per member chunk of a collective: nccl-tests' size split over the group.
std::size_t chunk_floats(const CommWork& c) {
  const double members = static_cast<double>(std::max<std::size_t>(1, c.ranks.size()));
  const double floats = c.op == model::OpClass::P2P ? c.size_bytes / sizeof(float)
                                                    : c.size_bytes / sizeof(float) / members;
  return std::max<std::size_t>(1, static_cast<std::size_t>(floats));
}

void Replay::prepare() {
  const std::size_t n = graph_.size();
  MOEPLAN_CHECK(plan_.tasks.size() == n, "a replay plan has one entry per task");
  gemms_.assign(n, {});
  attentions_.assign(n, nullptr);
  barriers_.resize(n);
  expected_.assign(graph_.resources().size(), 0);
  std::int64_t max_tag = 0;
  for (dag::TaskId t = 0; t < n; ++t) {
    const auto resources = graph_.resources(t);
    for (dag::ResourceId r : resources)
      if (owns(r)) ++expected_[r];
    if (std::none_of(resources.begin(), resources.end(), [&](dag::ResourceId r) { return owns(r); })) continue;
    const ReplayTask& task = plan_.tasks[t];
    // A Shared resource runs its tasks at once: each its own kernel.
    const dag::ResourceId home =
        graph_.resources()[resources.front()].policy == dag::DispatchPolicy::Shared
            ? static_cast<dag::ResourceId>(graph_.resources().size() + t)
            : resources.front();
    if (const auto* w = std::get_if<dag::WorkShape>(&task.work)) {
      for (const dag::GemmBatch& g : w->gemms) {
        auto& kernel = gemm_kernels_[{home, g.m, g.k, g.n, g.count}];
        if (!kernel) kernel = std::make_unique<hostrt::HostGemm>(g.m, g.k, g.n, g.count);
        gemms_[t].push_back(kernel.get());
      }
      if (const auto& a = w->attention) {
        auto& kernel = attention_kernels_[{home, a->queries, a->context, a->heads, a->head_dim}];
        if (!kernel) kernel = std::make_unique<hostrt::HostAttention>(a->queries, a->context, a->heads, a->head_dim);
        attentions_[t] = kernel.get();
      }
    } else {
      const CommWork& c = std::get<CommWork>(task.work);
      if (c.ranks.size() != resources.size())
        throw Error(ErrorKind::Input, fmt::format("task {} ('{}'): a collective over {} ranks on {} resources", t,
                                                  graph_.name(t), c.ranks.size(), resources.size()));
      const std::size_t members = c.ranks.size();
      const std::size_t floats = chunk_floats(c) * (c.op == model::OpClass::P2P ? 1 : members);
      int local = 0;
      for (dag::ResourceId r : resources) {
        if (!owns(r)) continue;
        ++local;
        const bool shared = graph_.resources()[r].policy == dag::DispatchPolicy::Shared;
        const std::int64_t key = shared ? -1 - static_cast<std::int64_t>(t) : static_cast<std::int64_t>(r);
        for (int which = 0; which < 2; ++which) {
          std::vector<float>& b = buffers_[{key, which}];
          if (b.size() < floats) b.assign(floats, 1.0f);
        }
      }
      barriers_[t] = std::make_unique<LocalBarrier>(local);
      const std::int64_t group = static_cast<std::int64_t>(members);
      max_tag = std::max(max_tag, ((static_cast<std::int64_t>(t) * 2 + 1) * group + group) * group);
    }
  }
#ifdef MOEPLAN_WITH_MPI
  if (world_.mpi && max_tag > comms_.tag_ub)
    throw Error(ErrorKind::Runtime, fmt::format("the graph's {} tasks need MPI tags up to {}, above this MPI's "
                                                "MPI_TAG_UB {}",
                                                n, max_tag, comms_.tag_ub));
  if (world_.mpi) {
    // One message per member part and iteration at most reaches any one
    // process (assignments to it, or reports to process 0), and every
    // iteration reads all of its messages before the next begins.
    std::size_t parts = 0;
    for (dag::TaskId t = 0; t < n; ++t) parts += graph_.resources(t).size();
    mailboxes_ = std::make_unique<HostMailboxes>(comms_.control, std::max<std::size_t>(1, parts));
  }
#endif
}

// A member's part of a collective: its chunks to and from every other member
// (pairwise: what Open MPI's shared-memory collectives do for small groups);
// ReduceScatter sums the received chunks into its own; AllReduce is a
// ReduceScatter then an AllGather of the reduced chunk. Members in this process
// copy from each other's buffers between barriers; members elsewhere trade
// point-to-point messages tagged by (task, phase, from, to), so that no two
// collectives' bytes can meet whatever order the ranks take them in.
void Replay::exchange(dag::ResourceId r, dag::TaskId t) {
  const CommWork& c = std::get<CommWork>(plan_.tasks[t].work);
  const auto resources = graph_.resources(t);
  const std::size_t g = c.ranks.size();
  const std::int32_t my_rank = graph_.resources()[r].rank;
  const std::size_t i = static_cast<std::size_t>(std::find(c.ranks.begin(), c.ranks.end(), my_rank) - c.ranks.begin());
  MOEPLAN_CHECK(i < g, "a member's rank is in its collective");
  std::vector<float>& send = buffer(r, t, 0);
  std::vector<float>& recv = buffer(r, t, 1);
  // The member resource of each rank, to find a local peer's buffers.
  auto member_resource = [&](std::size_t j) {
    for (dag::ResourceId m : resources)
      if (graph_.resources()[m].rank == c.ranks[j]) return m;
    MOEPLAN_CHECK(false, "a collective's rank has a resource");
    return resources.front();
  };
  auto local = [&](std::size_t j) { return world_.owner(c.ranks[j]) == world_.me; };
  LocalBarrier& barrier = *barriers_[t];
  auto wait = [&] {
    if (!barrier.arrive_and_wait(abort_)) throw Error(ErrorKind::Runtime, "iteration aborted");
  };
  const std::size_t chunk = chunk_floats(c);
  const std::size_t bytes = chunk * sizeof(float);
#ifdef MOEPLAN_WITH_MPI
  std::vector<MPI_Request> requests;
  auto tag = [&](int phase, std::size_t from, std::size_t to) {
    return static_cast<int>(((static_cast<std::int64_t>(t) * 2 + phase) * static_cast<std::int64_t>(g) +
                             static_cast<std::int64_t>(from)) *
                                static_cast<std::int64_t>(g) +
                            static_cast<std::int64_t>(to));
  };
  auto post = [&](int phase, float* to_send, std::size_t j, float* to_receive) {
    const int peer = world_.owner(c.ranks[j]);
    if (to_send != nullptr) {
      requests.emplace_back();
      check_mpi(MPI_Isend(to_send, static_cast<int>(chunk), MPI_FLOAT, peer, tag(phase, i, j), comms_.data,
                          &requests.back()),
                "MPI_Isend");
    }
    if (to_receive != nullptr) {
      requests.emplace_back();
      check_mpi(MPI_Irecv(to_receive, static_cast<int>(chunk), MPI_FLOAT, peer, tag(phase, j, i), comms_.data,
                          &requests.back()),
                "MPI_Irecv");
    }
  };
  // Polled, not MPI_Waitall (hostrt/mpi_poll.hpp says why).
  auto complete = [&] {
    hostrt::wait_polled(static_cast<int>(requests.size()), requests.data());
    requests.clear();
  };
#else
  auto post = [](int, float*, std::size_t, float*) {
    throw Error(ErrorKind::Runtime, "a collective member in another process, without MPI");
  };
  auto complete = [] {};
#endif
  if (c.op == model::OpClass::P2P) {
    // ranks = {sender, receiver}
    if (g != 2) throw Error(ErrorKind::Input, fmt::format("task {}: a P2P transfer has 2 ranks, not {}", t, g));
    const std::size_t other = 1 - i;
    if (!local(other)) post(0, i == 0 ? send.data() : nullptr, other, i == 1 ? recv.data() : nullptr);
    wait();
    if (i == 1 && local(other)) std::memcpy(recv.data(), buffer(member_resource(0), t, 0).data(), bytes);
    complete();
    wait();
    return;
  }
  const bool reduce = c.op == model::OpClass::ReduceScatter || c.op == model::OpClass::AllReduce;
  auto round = [&](int phase, bool own_chunk_only) {
    // phase 0: my chunk j to member j; phase 1 (AllReduce): my reduced chunk i to everyone.
    for (std::size_t j = 0; j < g; ++j)
      if (j != i && !local(j))
        post(phase, send.data() + (own_chunk_only ? i : j) * chunk, j, recv.data() + j * chunk);
    wait();
    for (std::size_t j = 0; j < g; ++j)
      if (j != i && local(j))
        std::memcpy(recv.data() + j * chunk, buffer(member_resource(j), t, 0).data() + (own_chunk_only ? j : i) * chunk,
                    bytes);
    complete();
  };
  round(0, false);
  if (reduce) {
    float* mine = send.data() + i * chunk;
    for (std::size_t j = 0; j < g; ++j)
      if (j != i)
        for (std::size_t e = 0; e < chunk; ++e) mine[e] += recv[j * chunk + e];
  }
  wait();  // local peers have read (and reduced into) what they need
  if (c.op == model::OpClass::AllReduce) {
    round(1, true);
    wait();
  }
}

void Replay::run_part(dag::ResourceId r, dag::TaskId t) {
  Part part;
  part.begin_ns = now_ns() - t0_ns_;
  if (std::holds_alternative<CommWork>(plan_.tasks[t].work)) {
    exchange(r, t);
  } else {
    for (hostrt::HostGemm* g : gemms_[t]) g->run();
    if (attentions_[t]) attentions_[t]->run();
  }
  part.end_ns = now_ns() - t0_ns_;
  report(r, t, part);
}

void Replay::fail(std::exception_ptr e) {
  {
    std::lock_guard lock(scheduler_mutex_);
    if (!failure_) failure_ = e;
    abort_ = true;
    scheduler_cv_.notify_all();
  }
  for (auto& s : slots_)
    if (s) {
      std::lock_guard lock(s->mutex);
      s->cv.notify_all();
    }
  for (auto& b : barriers_)
    if (b) b->wake();
#ifdef MOEPLAN_WITH_MPI
  if (mailboxes_) mailboxes_->interrupt();
#endif
}

// Process 0: the scheduler hands out what each resource takes next.
void Replay::dispatch(const std::vector<Assignment>& assignments) {
  for (const Assignment& a : assignments) {
    if (owns(a.resource)) {
      Slot& slot = *slots_[a.resource];
      std::lock_guard lock(slot.mutex);
      slot.queue.push_back(a.task);
      slot.cv.notify_one();
      continue;
    }
#ifdef MOEPLAN_WITH_MPI
    mailboxes_->post(world_.owner(graph_.resources()[a.resource].rank),
                     {static_cast<std::int64_t>(a.resource), static_cast<std::int64_t>(a.task), 0, 0});
#endif
  }
}

void Replay::report(dag::ResourceId r, dag::TaskId t, Part part) {
  if (world_.me != 0) {
#ifdef MOEPLAN_WITH_MPI
    mailboxes_->post(0, {static_cast<std::int64_t>(r), static_cast<std::int64_t>(t), part.begin_ns, part.end_ns});
#endif
    return;
  }
  std::vector<Assignment> next;
  {
    std::lock_guard lock(scheduler_mutex_);
    // A collective starts when its last member takes it and ends when its last member is done.
    Part& merged = times_[t];
    merged.begin_ns = std::max(merged.begin_ns, part.begin_ns);
    merged.end_ns = std::max(merged.end_ns, part.end_ns);
    next = scheduler_->member_done(t);
    if (scheduler_->finished() || scheduler_->stalled()) {
      if (scheduler_->stalled()) stall_ = scheduler_->stuck_description();
      scheduler_cv_.notify_all();
    }
  }
  (void)r;
  dispatch(next);
}

void Replay::executor(dag::ResourceId r, std::size_t expected) {
  Slot& slot = *slots_[r];
  const bool shared = graph_.resources()[r].policy == dag::DispatchPolicy::Shared;
  std::vector<std::thread> streams;  // Shared: every task at once, a thread each
  try {
    for (std::size_t k = 0; k < expected; ++k) {
      dag::TaskId t = 0;
      {
        std::unique_lock lock(slot.mutex);
        slot.cv.wait(lock, [&] { return !slot.queue.empty() || abort_.load(); });
        if (abort_) break;
        t = slot.queue.front();
        slot.queue.pop_front();
      }
      if (!shared) {
        run_part(r, t);
        continue;
      }
      streams.emplace_back([this, r, t] {
        try {
          run_part(r, t);
        } catch (...) {
          fail(std::current_exception());
        }
      });
    }
  } catch (...) {
    fail(std::current_exception());
  }
  for (std::thread& s : streams) s.join();
}

std::vector<Part> Replay::iterate() {
  const std::size_t resources = graph_.resources().size();
  slots_.clear();
  slots_.resize(resources);
  for (dag::ResourceId r = 0; r < resources; ++r)
    if (owns(r)) slots_[r] = std::make_unique<Slot>();
  abort_ = false;
  failure_ = nullptr;
  stall_.clear();
  times_.assign(graph_.size(), Part{});
  std::vector<std::thread> threads;
  for (dag::ResourceId r = 0; r < resources; ++r)
    if (owns(r) && expected_[r] > 0) threads.emplace_back([this, r] { executor(r, expected_[r]); });
#ifdef MOEPLAN_WITH_MPI
  // Every process's threads wait for work; then one clock origin for all
  // (steady_clock is one clock for every process of one host).
  std::size_t remote_parts = 0;  // process 0: parts done elsewhere; others: parts assigned here
  for (dag::TaskId t = 0; t < graph_.size(); ++t)
    for (dag::ResourceId r : graph_.resources(t))
      if (world_.me == 0 ? !owns(r) : owns(r)) ++remote_parts;
  std::thread control;
  if (world_.mpi) {
    mailboxes_->reset();  // before the barrier: nobody posts to it before then
    quiet_barrier(comms_.control);
    std::int64_t t0 = now_ns();
    check_mpi(MPI_Bcast(&t0, 1, MPI_INT64_T, 0, comms_.control), "MPI_Bcast");
    t0_ns_ = t0;
    control = std::thread([this, remote_parts] {
      try {
        for (std::size_t k = 0; k < remote_parts; ++k) {
          const std::optional<ControlMessage> m = mailboxes_->receive();
          if (!m) break;  // a failure: the iteration ends
          if (world_.me == 0) {
            report(static_cast<dag::ResourceId>(m->resource), static_cast<dag::TaskId>(m->task),
                   {m->begin_ns, m->end_ns});
          } else {
            Slot& slot = *slots_[static_cast<std::size_t>(m->resource)];
            std::lock_guard lock(slot.mutex);
            slot.queue.push_back(static_cast<dag::TaskId>(m->task));
            slot.cv.notify_one();
          }
        }
      } catch (...) {
        fail(std::current_exception());
      }
    });
  } else {
    t0_ns_ = now_ns();
  }
#else
  t0_ns_ = now_ns();
#endif
  if (world_.me == 0) {
    std::vector<Assignment> first;
    {
      std::lock_guard lock(scheduler_mutex_);
      if (!scheduler_) scheduler_.emplace(graph_);
      first = scheduler_->start();
      if (scheduler_->stalled()) stall_ = scheduler_->stuck_description();
    }
    try {
      dispatch(first);
    } catch (...) {
      fail(std::current_exception());
    }
    std::unique_lock lock(scheduler_mutex_);
    scheduler_cv_.wait(lock, [&] { return scheduler_->finished() || !stall_.empty() || abort_.load(); });
    if (!stall_.empty() && !failure_) {
      failure_ = std::make_exception_ptr(
          Error(ErrorKind::Runtime, "the replay cannot go on: " + stall_ +
                                        " (the measured timings let the resources take collectives in an order the "
                                        "simulation did not; the graph is not safe for this machine's timings)"));
    }
    lock.unlock();
    if (failure_) fail(failure_);
  }
#ifdef MOEPLAN_WITH_MPI
  // Peers may wait in a collective for this process forever: a failure ends them all,
  // before the threads are joined and again after (a failure met while they finished).
  auto abort_on_failure = [&] {
    if (!world_.mpi || !failure_) return;
    try {
      std::rethrow_exception(failure_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "moeplan: error: process %d: %s\n", world_.me, e.what());
    }
    MPI_Abort(MPI_COMM_WORLD, 1);
  };
  abort_on_failure();
#endif
  for (std::thread& t : threads) t.join();
#ifdef MOEPLAN_WITH_MPI
  if (control.joinable()) control.join();
  abort_on_failure();
#endif
  if (failure_) std::rethrow_exception(failure_);
  return times_;
}

// ---------------------------------------------------------------------------

HostBackend::~HostBackend() {
#ifdef MOEPLAN_WITH_MPI
  // MPI itself ends at exit (hostrt/mpi_session.hpp).
  if (comms_.control != MPI_COMM_NULL) MPI_Comm_free(&comms_.control);
  if (comms_.data != MPI_COMM_NULL) MPI_Comm_free(&comms_.data);
#endif
}

World HostBackend::start_world() {
  hostrt::precise_sleeps();  // before any thread starts: they inherit it
  World w;
#ifdef MOEPLAN_WITH_MPI
  if (!hostrt::start_mpi_session()) return w;
  if (comms_.control == MPI_COMM_NULL) {
    // Not OMPI_MCA_mpi_yield_when_idle: every wait here is polled with
    // sleeps (hostrt/mpi_poll.hpp) or blocks on a mailbox, so Open MPI
    // never spins, and its sched_yield on an idle test hands the core to the
    // compute thread of this rank for a whole scheduler slice (measured: a
    // 50 us poll beside a busy thread on one core took 3.9 ms at the 90th
    // percentile with the yield, 15 us without, Linux 6.18).
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comms_.control), "MPI_Comm_dup");
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comms_.data), "MPI_Comm_dup");
    int* ub = nullptr;
    int found = 0;
    check_mpi(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found), "MPI_Comm_get_attr");
    if (found && ub != nullptr) comms_.tag_ub = *ub;
  }
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &w.size), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &w.me), "MPI_Comm_rank");
  w.mpi = true;
#else
  if (const char* size = std::getenv("OMPI_COMM_WORLD_SIZE"); size != nullptr && std::string(size) != "1")
    throw Error(ErrorKind::Runtime, fmt::format("started by mpirun with {} ranks, but this moeplan was built without "
                                                "MPI (MOEPLAN_WITH_MPI, libopenmpi-dev): every process would replay "
                                                "every rank alone",
                                                size));
#endif
  return w;
}

// The median iteration (the lower middle one for an even count).
std::size_t median_index(const std::vector<double>& ms) {
  std::vector<std::size_t> order(ms.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ms[a] < ms[b]; });
  return order[(order.size() - 1) / 2];
}

MeasuredRun HostBackend::run(const dag::TaskGraph& graph, const ReplayPlan& plan, const ExecuteOptions& options) {
  if (options.iterations < 1 || options.warmup_iterations < 0)
    throw Error(ErrorKind::Input, fmt::format("iterations {} (at least 1) and warm-up {} (at least 0)",
                                              options.iterations, options.warmup_iterations));
  for (dag::TaskId t = 0; t < graph.size(); ++t)
    if (const auto* c = std::get_if<CommWork>(&plan.tasks.at(t).work);
        c != nullptr && graph.group_size(t) > static_cast<std::int32_t>(graph.resources(t).size()))
      throw Error(ErrorKind::Input,
                  fmt::format("task {} ('{}') is a collective over {} ranks of which the graph holds {}: a symmetric "
                              "graph cannot be replayed; set schedule.mode to multi_rank",
                              t, graph.name(t), graph.group_size(t), graph.resources(t).size()),
                  "schedule.mode");
  const World world = start_world();
#ifdef MOEPLAN_WITH_MPI
  Replay replay(graph, plan, world, comms_);
#else
  Replay replay(graph, plan, world);
#endif
  MeasuredRun out;
  out.complete = world.me == 0;
  std::vector<std::vector<Part>> measured;
  const int total = options.warmup_iterations + options.iterations;
  for (int i = 0; i < total; ++i) {
    std::vector<Part> times = replay.iterate();
    if (world.me != 0) continue;
    double end_ms = 0;
    for (const Part& p : times) end_ms = std::max(end_ms, static_cast<double>(p.end_ns) / 1e6);
    const bool warmup = i < options.warmup_iterations;
    if (options.progress)
      *options.progress << fmt::format("moeplan execute: iteration {}/{}{}: {:.3f} ms\n", i + 1, total,
                                       warmup ? " (warm-up)" : "", end_ms)
                        << std::flush;
    if (warmup) continue;
    out.iteration_ms.push_back(end_ms);
    measured.push_back(std::move(times));
  }
  out.proxied.assign(graph.size(), false);
  if (world.me != 0) return out;
  const std::vector<Part>& median = measured[median_index(out.iteration_ms)];
  sim::Timeline& tl = out.timeline;
  for (const Part& p : median) {
    tl.start_ms.push_back(static_cast<double>(p.begin_ns) / 1e6);
    tl.end_ms.push_back(static_cast<double>(p.end_ns) / 1e6);
    tl.makespan_ms = std::max(tl.makespan_ms, tl.end_ms.back());
  }
  std::vector<std::uint32_t> order(graph.size());
  for (std::uint32_t t = 0; t < order.size(); ++t) order[t] = t;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return tl.start_ms[a] < tl.start_ms[b]; });
  tl.start_order.assign(graph.size(), 0);
  for (std::uint32_t i = 0; i < order.size(); ++i) tl.start_order[order[i]] = i;
  return out;
}

}  // namespace

std::unique_ptr<Backend> make_host_backend() { return std::make_unique<HostBackend>(); }

}  // namespace moeplan::exec
