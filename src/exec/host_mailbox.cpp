#include "host_mailbox.hpp"

#ifdef MOEPLAN_WITH_MPI

#include <pthread.h>

#include <cstring>
#include <new>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/hostrt/mpi_poll.hpp>

namespace moeplan::exec {

// The start of one process's segment; `capacity` messages follow it.
struct MailboxHeader {
  pthread_mutex_t mutex;
  pthread_cond_t ready;
  std::uint64_t read = 0;     // messages taken (by the owner)
  std::uint64_t written = 0;  // messages posted (by anyone)
  std::uint32_t interrupted = 0;
  ControlMessage* ring() { return reinterpret_cast<ControlMessage*>(this + 1); }
};

namespace {

using hostrt::check_mpi;  // hostrt/mpi_poll.hpp

void check_posix(int status, const char* what) {
  if (status != 0)
    throw Error(ErrorKind::Runtime, fmt::format("host mailbox: {} failed ({})", what, std::strerror(status)));
}

// Holds a process-shared mutex for a scope.
class Locked {
 public:
  explicit Locked(MailboxHeader& box) : box_(box) { check_posix(pthread_mutex_lock(&box_.mutex), "pthread_mutex_lock"); }
  ~Locked() { pthread_mutex_unlock(&box_.mutex); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  MailboxHeader& box_;
};

}  // namespace

HostMailboxes::HostMailboxes(MPI_Comm comm, std::size_t capacity) : capacity_(capacity) {
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(comm, &me_), "MPI_Comm_rank");
  // The processes that can share memory with this one, in comm's order (key = rank).
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, me_, MPI_INFO_NULL, &node_), "MPI_Comm_split_type");
  int on_host = 0;
  check_mpi(MPI_Comm_size(node_, &on_host), "MPI_Comm_size");
  int all_on_one_host = on_host == size ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &all_on_one_host, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (!all_on_one_host) {
    MPI_Comm_free(&node_);
    throw Error(ErrorKind::Runtime, fmt::format("the host executor's {} processes are not all on one host (this one "
                                                "shares memory with {}): they need one clock and shared memory; run "
                                                "mpirun on one machine",
                                                size, on_host));
  }
  const MPI_Aint bytes = static_cast<MPI_Aint>(sizeof(MailboxHeader) + capacity_ * sizeof(ControlMessage));
  void* mine = nullptr;
  check_mpi(MPI_Win_allocate_shared(bytes, static_cast<int>(alignof(MailboxHeader)), MPI_INFO_NULL, node_, &mine,
                                    &window_),
            "MPI_Win_allocate_shared");
  // This process initialises its own mailbox; the others wait for that below.
  auto* box = new (mine) MailboxHeader;
  pthread_mutexattr_t mutex_attr;
  pthread_mutexattr_init(&mutex_attr);
  check_posix(pthread_mutexattr_setpshared(&mutex_attr, PTHREAD_PROCESS_SHARED), "pthread_mutexattr_setpshared");
  check_posix(pthread_mutex_init(&box->mutex, &mutex_attr), "pthread_mutex_init");
  pthread_mutexattr_destroy(&mutex_attr);
  pthread_condattr_t cond_attr;
  pthread_condattr_init(&cond_attr);
  check_posix(pthread_condattr_setpshared(&cond_attr, PTHREAD_PROCESS_SHARED), "pthread_condattr_setpshared");
  check_posix(pthread_cond_init(&box->ready, &cond_attr), "pthread_cond_init");
  pthread_condattr_destroy(&cond_attr);
  check_mpi(MPI_Barrier(node_), "MPI_Barrier");
  boxes_.resize(static_cast<std::size_t>(size));
  for (int p = 0; p < size; ++p) {
    MPI_Aint their_bytes = 0;
    int unit = 0;
    void* theirs = nullptr;
    check_mpi(MPI_Win_shared_query(window_, p, &their_bytes, &unit, &theirs), "MPI_Win_shared_query");
    boxes_[static_cast<std::size_t>(p)] = static_cast<MailboxHeader*>(theirs);
  }
}

HostMailboxes::~HostMailboxes() {
  // Nobody posts after this barrier: every process is done with the run.
  MPI_Barrier(node_);
  MailboxHeader* box = boxes_[static_cast<std::size_t>(me_)];
  pthread_cond_destroy(&box->ready);
  pthread_mutex_destroy(&box->mutex);
  box->~MailboxHeader();
  MPI_Win_free(&window_);
  MPI_Comm_free(&node_);
}

void HostMailboxes::post(int to, const ControlMessage& message) {
  MailboxHeader& box = *boxes_.at(static_cast<std::size_t>(to));
  Locked lock(box);
  if (box.written - box.read >= capacity_)
    throw Error(ErrorKind::Runtime, fmt::format("host mailbox of process {} is full ({} unread messages)", to, capacity_));
  box.ring()[box.written % capacity_] = message;
  ++box.written;
  check_posix(pthread_cond_signal(&box.ready), "pthread_cond_signal");
}

std::optional<ControlMessage> HostMailboxes::receive() {
  MailboxHeader& box = *boxes_[static_cast<std::size_t>(me_)];
  Locked lock(box);
  while (box.read == box.written && box.interrupted == 0)
    check_posix(pthread_cond_wait(&box.ready, &box.mutex), "pthread_cond_wait");
  if (box.interrupted != 0) return std::nullopt;
  const ControlMessage m = box.ring()[box.read % capacity_];
  ++box.read;
  return m;
}

void HostMailboxes::interrupt() {
  MailboxHeader& box = *boxes_[static_cast<std::size_t>(me_)];
  Locked lock(box);
  box.interrupted = 1;
  pthread_cond_broadcast(&box.ready);
}

void HostMailboxes::reset() {
  MailboxHeader& box = *boxes_[static_cast<std::size_t>(me_)];
  Locked lock(box);
  box.interrupted = 0;
}

}  // namespace moeplan::exec

#endif
