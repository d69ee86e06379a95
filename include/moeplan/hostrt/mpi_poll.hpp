#pragma once
// How a host communication thread waits for its messages, in the executor and
// in the calibration that prices it: polled, not MPI_Wait. Open MPI's wait
// spins, and a spinning communication thread takes a core from the compute
// threads of every process on the host (a GPU's NCCL kernel waits on SMs of
// its own instead), so the executor polls, and the overlap the calibration
// measures is the overlap of a polling thread.

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace moeplan::hostrt {

/// Makes this thread's (and the threads it starts afterwards) short sleeps
/// last what they ask for: Linux lets a sleep overrun by the thread's timer
/// slack, 50 us by default, which would turn a 20 us poll into ~70 us.
inline void precise_sleeps() {
#ifdef __linux__
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);  // 1 us, in ns
#endif
}

}  // namespace moeplan::hostrt

#ifdef MOEPLAN_WITH_MPI

#include <chrono>
#include <string>
#include <thread>

// The C API only: Open MPI's deprecated C++ bindings do not compile warning-free.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <moeplan/core/error.hpp>

namespace moeplan::hostrt {

/// A waiting communication thread's test interval: far below a collective's
/// time on the host (0.1 to 10 ms), long enough to leave the core to compute.
/// With Open MPI's shared-memory transport a message above the eager limit is
/// a rendezvous: a few round trips of the tests, then one single copy (CMA).
inline constexpr int kPollMicroseconds = 20;

/// A runtime Error naming the MPI call when `status` is not MPI_SUCCESS (every
/// MPI call of calibrate, the executor and the MPI shards goes through it).
inline void check_mpi(int status, const char* what) {
  if (status != MPI_SUCCESS)
    throw Error(ErrorKind::Runtime, "MPI: " + std::string(what) + " failed (" + std::to_string(status) + ")");
}

/// Tests `count` requests every kPollMicroseconds until all are done (the
/// sleep is precise under precise_sleeps); a runtime Error for an MPI failure.
inline void wait_polled(int count, MPI_Request* requests) {
  for (int done = count == 0 ? 1 : 0; !done;) {
    check_mpi(MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    if (!done) std::this_thread::sleep_for(std::chrono::microseconds(kPollMicroseconds));
  }
}

}  // namespace moeplan::hostrt

#endif
