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

namespace moeplan::calibrate {

/// Makes this thread's (and the threads it starts afterwards) short sleeps
/// last what they ask for: Linux lets a sleep overrun by the thread's timer
/// slack, 50 us by default, which would turn a 20 us poll into ~70 us.
inline void precise_sleeps() {
#ifdef __linux__
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);  // 1 us, in ns
#endif
}

}  // namespace moeplan::calibrate

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

namespace moeplan::calibrate {

/// A waiting communication thread tests its requests without pause for
/// kSpinMicroseconds (a small message completes within it: no sleep added to
/// its time), then sleeps kPollMicroseconds between bursts of tests of the
/// same length: a large transfer, which Open MPI's shared-memory transport
/// moves fragment by fragment inside the tests, keeps most of its rate, and a
/// long wait leaves most of the core to the compute threads.
inline constexpr int kSpinMicroseconds = 100;
inline constexpr int kPollMicroseconds = 20;

/// Waits for `count` requests as above; a runtime Error for an MPI failure.
inline void wait_polled(int count, MPI_Request* requests) {
  using Clock = std::chrono::steady_clock;
  for (int done = count == 0 ? 1 : 0; !done;) {
    const Clock::time_point burst_end = Clock::now() + std::chrono::microseconds(kSpinMicroseconds);
    do {
      const int status = MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
      if (status != MPI_SUCCESS)
        throw Error(ErrorKind::Runtime, "MPI: MPI_Testall failed (" + std::to_string(status) + ")");
    } while (!done && Clock::now() < burst_end);
    if (!done) std::this_thread::sleep_for(std::chrono::microseconds(kPollMicroseconds));
  }
}

}  // namespace moeplan::calibrate

#endif
