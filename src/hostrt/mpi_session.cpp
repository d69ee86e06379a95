#include <moeplan/hostrt/mpi_session.hpp>

#include <cstdint>
#include <cstdlib>
#include <mutex>

#include <moeplan/core/error.hpp>
#include <moeplan/core/launch.hpp>

#ifdef MOEPLAN_WITH_MPI
#include <moeplan/hostrt/mpi_poll.hpp>  // <mpi.h>, check_mpi
#endif

namespace moeplan::hostrt {

#ifdef MOEPLAN_WITH_MPI
namespace {

void end_session() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

bool session_running() {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  int finalized = 0;
  check_mpi(MPI_Finalized(&finalized), "MPI_Finalized");
  return initialized && !finalized;
}

}  // namespace

bool start_mpi_session() {
  if (!launched_by_mpirun()) return false;
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    std::atexit(end_session);
  }
  int finalized = 0;
  check_mpi(MPI_Finalized(&finalized), "MPI_Finalized");
  if (finalized)
    throw Error(ErrorKind::Runtime, "MPI was started and ended by another part of this process: calibrate and the "
                                    "executor need it running; run them as commands of their own");
  int level = 0;
  check_mpi(MPI_Query_thread(&level), "MPI_Query_thread");
  if (level < MPI_THREAD_MULTIPLE)
    throw Error(ErrorKind::Runtime, "MPI: MPI_THREAD_MULTIPLE is not provided (the host executor's threads each make "
                                    "MPI calls)");
  return true;
}

std::string broadcast_from_rank0(const std::string& text) {
  if (!session_running()) return text;
  int rank = 0;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  std::uint64_t bytes = text.size();
  check_mpi(MPI_Bcast(&bytes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::string out = rank == 0 ? text : std::string(static_cast<std::size_t>(bytes), '\0');
  // In pieces below INT_MAX bytes (MPI counts are int).
  constexpr std::uint64_t kPiece = 1u << 30;
  for (std::uint64_t at = 0; at < bytes; at += kPiece) {
    const int n = static_cast<int>(bytes - at < kPiece ? bytes - at : kPiece);
    check_mpi(MPI_Bcast(out.data() + at, n, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }
  return out;
}

#else

bool start_mpi_session() { return false; }
std::string broadcast_from_rank0(const std::string& text) { return text; }

#endif

}  // namespace moeplan::hostrt
