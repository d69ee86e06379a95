#pragma once
// The host executor's control channel between its MPI processes: one mailbox
// per process in memory all of them map (an MPI shared window), each a ring of
// fixed-size messages under a process-shared mutex and condition variable.
//
// Why not MPI messages: a waiting receiver has to poll them, and a poller on
// the core of a compute thread either costs that thread a context switch per
// poll (measured: a 50 us poll took a quarter of the core's samples in
// `perf`, and made the replayed GEMMs 35% slower than calibrated) or, with
// Open MPI's yield_when_idle, waits a whole scheduler slice behind it
// (3.9 ms per wake-up, which put 2-4 ms between dependent tasks). A blocked
// condition-variable wait costs nothing until it is signalled, and wakes in
// the time of one futex wake-up. Every process must be on one host, which the
// executor already needs for its one clock; the constructor checks it.

#ifdef MOEPLAN_WITH_MPI

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <moeplan/hostrt/mpi_poll.hpp>  // <mpi.h> without its C++ bindings

namespace moeplan::exec {

/// One control message: an assignment (process 0 -> the owner of a resource)
/// or a member's part done with its measured times (owner -> process 0).
struct ControlMessage {
  std::int64_t resource = 0;
  std::int64_t task = 0;
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
};

struct MailboxHeader;  // in the shared window (host_mailbox.cpp)

/// Every process's mailbox. Construction and destruction are collective over
/// `comm` (all its processes, in the same order).
class HostMailboxes {
 public:
  /// `capacity`: the most messages one mailbox may hold unread (the sender
  /// gets a runtime Error beyond it, never a lost message). A runtime Error
  /// when `comm` spans more than one host.
  HostMailboxes(MPI_Comm comm, std::size_t capacity);
  ~HostMailboxes();
  HostMailboxes(const HostMailboxes&) = delete;
  HostMailboxes& operator=(const HostMailboxes&) = delete;

  /// Appends a message to process `to`'s mailbox and wakes its receiver.
  void post(int to, const ControlMessage& message);
  /// The oldest unread message of this process's mailbox, waiting without
  /// polling until there is one; nullopt once interrupt() was called.
  std::optional<ControlMessage> receive();
  /// Wakes this process's receiver for good (a failure ends the iteration).
  void interrupt();
  /// A new iteration: the interruption is cleared (the mailbox is empty).
  void reset();

 private:
  MPI_Win window_ = MPI_WIN_NULL;
  MPI_Comm node_ = MPI_COMM_NULL;     // `comm`'s processes on this host (all of them)
  std::vector<MailboxHeader*> boxes_;  // per process of `comm`, mapped here
  std::size_t capacity_ = 0;
  int me_ = 0;
};

}  // namespace moeplan::exec

#endif
