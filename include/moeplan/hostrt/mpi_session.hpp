#pragma once
// One MPI session per process, shared by calibrate and the executor: MPI can
// be started only once in a process, so a command that measures and then
// replays (`validate-hw --calibrate`) needs both to use the same one. Started
// at MPI_THREAD_MULTIPLE, the level the host executor needs (each of its
// threads calls MPI; calibrate's one communication thread is served by it as
// well: its AlltoAll line measured the same under MPI_THREAD_SERIALIZED,
// 0.077 ms, and MPI_THREAD_MULTIPLE, 0.076 ms, at 4 KiB on host-2), and ended
// when the process exits.

#include <string>

namespace moeplan::hostrt {

/// Under mpirun in a build with MPI: starts MPI in this process unless it runs
/// already, and returns true. Not under mpirun, or without MPI: false. A
/// runtime Error when MPI was ended already in this process or runs below
/// MPI_THREAD_MULTIPLE.
bool start_mpi_session();

/// Rank 0's `text` on every process of the session (MPI_COMM_WORLD); `text`
/// itself when no session runs.
std::string broadcast_from_rank0(const std::string& text);

}  // namespace moeplan::hostrt
