#include <moeplan/dist/shard.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/core/launch.hpp>

#ifdef MOEPLAN_WITH_MPI
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace moeplan::dist {
namespace {

#ifdef MOEPLAN_WITH_MPI
void check_mpi(int status, const char* what) {
  if (status != MPI_SUCCESS) throw Error(ErrorKind::Runtime, fmt::format("MPI: {} failed ({})", what, status));
}
#endif

}  // namespace

Shard::Shard() {
#ifdef MOEPLAN_WITH_MPI
  if (!launched_by_mpirun()) return;
  int provided = 0;
  // The worker threads of a rank never call MPI: the main thread gathers.
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  initialised_ = true;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
#else
  if (const char* size = std::getenv("OMPI_COMM_WORLD_SIZE"); size != nullptr && std::string(size) != "1")
    throw Error(ErrorKind::Runtime, fmt::format("started by mpirun with {} ranks, but this moeplan was built without "
                                                "MPI (MOEPLAN_WITH_MPI, libopenmpi-dev): every rank would do all the "
                                                "work and write the same file",
                                                size));
#endif
}

Shard::~Shard() {
#ifdef MOEPLAN_WITH_MPI
  // Every rank leaves together: mpirun ends the job when one rank exits with
  // an error, so a rank that left first could cut rank 0 off before it wrote
  // its report or its error line. (No check: a destructor cannot throw, and
  // MPI_Finalize follows whatever the barrier returned.)
  if (initialised_) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
  }
#endif
}

std::vector<std::string> Shard::gather(std::vector<std::string> texts) const {
  if (size_ == 1) return texts;
#ifdef MOEPLAN_WITH_MPI
  // One message per rank: its items' texts, each as an 8-byte length then the bytes, in item order.
  if (rank_ != 0) {
    std::string packed;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (!mine(i)) continue;
      const std::uint64_t n = texts[i].size();
      packed.append(reinterpret_cast<const char*>(&n), sizeof n);
      packed += texts[i];
    }
    check_mpi(MPI_Send(packed.data(), static_cast<int>(packed.size()), MPI_CHAR, 0, 0, MPI_COMM_WORLD), "MPI_Send");
    return {};
  }
  for (int from = 1; from < size_; ++from) {
    MPI_Status status;
    check_mpi(MPI_Probe(from, 0, MPI_COMM_WORLD, &status), "MPI_Probe");
    int bytes = 0;
    check_mpi(MPI_Get_count(&status, MPI_CHAR, &bytes), "MPI_Get_count");
    std::string packed(static_cast<std::size_t>(bytes), '\0');
    check_mpi(MPI_Recv(packed.data(), bytes, MPI_CHAR, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    std::size_t at = 0;
    for (std::size_t i = static_cast<std::size_t>(from); i < texts.size(); i += static_cast<std::size_t>(size_)) {
      std::uint64_t n = 0;
      if (at + sizeof n > packed.size()) throw Error(ErrorKind::Runtime, fmt::format("rank {} sent too few items", from));
      std::memcpy(&n, packed.data() + at, sizeof n);
      at += sizeof n;
      if (at + n > packed.size()) throw Error(ErrorKind::Runtime, fmt::format("rank {} sent a cut item", from));
      texts[i].assign(packed, at, n);
      at += n;
    }
  }
  return texts;
#else
  return texts;
#endif
}

}  // namespace moeplan::dist
