// NCCL calibration: times alltoall, allgather, reducescatter and allreduce
// over 2^18 .. 24 x 2^18 fp32 elements (FSMoE Fig. 5's range) on every GPU of
// this process, and prints the CSV `moeplan fit` reads. Sizes are bytes in
// nccl-tests' convention: allreduce the buffer, allgather the output,
// reducescatter the input, alltoall the send buffer, per rank.
//
// One process per node drives all its GPUs. Across nodes, rank 0's process
// writes the NCCL unique id to --id-file (a shared filesystem) and the others
// read it; --node N --nodes K say which node this is.
//   nccl_bench [--nodes K --node N --id-file PATH]

#include <nccl.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"

#define CALIB_NCCL(call)                                                                               \
  do {                                                                                                 \
    ncclResult_t status_ = (call);                                                                     \
    if (status_ != ncclSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(status_)); \
      std::exit(1);                                                                                    \
    }                                                                                                  \
  } while (0)

namespace {

ncclUniqueId shared_id(int node, const std::string& path) {
  ncclUniqueId id;
  if (node == 0) {
    CALIB_NCCL(ncclGetUniqueId(&id));
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof(id.internal));
    std::rename(tmp.c_str(), path.c_str());
    return id;
  }
  for (int tries = 0; tries < 600; ++tries) {  // wait up to 60 s for rank 0
    std::ifstream in(path, std::ios::binary);
    if (in.read(id.internal, sizeof(id.internal))) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "nccl_bench: no unique id in %s after 60 s\n", path.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 1, node = 0;
  std::string id_file;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--nodes") && i + 1 < argc)
      nodes = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--node") && i + 1 < argc)
      node = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--id-file") && i + 1 < argc)
      id_file = argv[++i];
    else {
      std::fprintf(stderr, "usage: nccl_bench [--nodes K --node N --id-file PATH]\n");
      return 2;
    }
  }
  if (nodes < 1 || node < 0 || node >= nodes || (nodes > 1 && id_file.empty())) {
    std::fprintf(stderr, "nccl_bench: need 0 <= --node < --nodes, and --id-file when --nodes > 1\n");
    return 2;
  }
  int local = 0;
  CALIB_CUDA(cudaGetDeviceCount(&local));
  const int world = nodes * local;
  ncclUniqueId id;
  if (nodes == 1)
    CALIB_NCCL(ncclGetUniqueId(&id));
  else
    id = shared_id(node, id_file);

  std::vector<ncclComm_t> comms(local);
  std::vector<cudaStream_t> streams(local);
  std::vector<float*> send(local), recv(local);
  const size_t max_elems = 24u << 18;
  CALIB_NCCL(ncclGroupStart());
  for (int g = 0; g < local; ++g) {
    CALIB_CUDA(cudaSetDevice(g));
    CALIB_NCCL(ncclCommInitRank(&comms[g], world, id, node * local + g));
  }
  CALIB_NCCL(ncclGroupEnd());
  for (int g = 0; g < local; ++g) {
    CALIB_CUDA(cudaSetDevice(g));
    CALIB_CUDA(cudaStreamCreate(&streams[g]));
    CALIB_CUDA(cudaMalloc(&send[g], max_elems * world * sizeof(float)));
    CALIB_CUDA(cudaMalloc(&recv[g], max_elems * world * sizeof(float)));
  }
  const char* link = nodes > 1 ? "inter" : "intra";
  auto sync_all = [&] {
    for (int g = 0; g < local; ++g) {
      CALIB_CUDA(cudaSetDevice(g));
      CALIB_CUDA(cudaStreamSynchronize(streams[g]));
    }
  };
  // Times one collective on all local GPUs together; rank-local time of GPU 0's stream.
  auto run = [&](auto&& issue) {
    auto launch = [&] {
      CALIB_NCCL(ncclGroupStart());
      for (int g = 0; g < local; ++g) issue(g);
      CALIB_NCCL(ncclGroupEnd());
    };
    sync_all();
    CALIB_CUDA(cudaSetDevice(0));
    const double ms = calib::time_ms(streams[0], launch);
    sync_all();
    return ms;
  };
  if (node == 0) calib::csv_header();
  for (int k = 1; k <= 24; ++k) {
    const size_t elems = static_cast<size_t>(k) << 18;  // per-rank buffer, fp32
    const size_t chunk = elems / world;
    const double bytes = static_cast<double>(elems) * sizeof(float);
    const double ar = run(
        [&](int g) { CALIB_NCCL(ncclAllReduce(send[g], recv[g], elems, ncclFloat, ncclSum, comms[g], streams[g])); });
    const double ag =
        run([&](int g) { CALIB_NCCL(ncclAllGather(send[g], recv[g], chunk, ncclFloat, comms[g], streams[g])); });
    const double rs = run([&](int g) {
      CALIB_NCCL(ncclReduceScatter(send[g], recv[g], chunk, ncclFloat, ncclSum, comms[g], streams[g]));
    });
    const double a2a = run([&](int g) {
      for (int peer = 0; peer < world; ++peer) {
        CALIB_NCCL(ncclSend(send[g] + peer * chunk, chunk, ncclFloat, peer, comms[g], streams[g]));
        CALIB_NCCL(ncclRecv(recv[g] + peer * chunk, chunk, ncclFloat, peer, comms[g], streams[g]));
      }
    });
    if (node == 0) {
      calib::csv_row("allreduce", link, world, bytes, ar);
      calib::csv_row("allgather", link, world, static_cast<double>(chunk * world * sizeof(float)), ag);
      calib::csv_row("reducescatter", link, world, static_cast<double>(chunk * world * sizeof(float)), rs);
      calib::csv_row("a2a", link, world, static_cast<double>(chunk * world * sizeof(float)), a2a);
    }
  }
  for (int g = 0; g < local; ++g) {
    CALIB_CUDA(cudaSetDevice(g));
    CALIB_CUDA(cudaFree(send[g]));
    CALIB_CUDA(cudaFree(recv[g]));
    CALIB_NCCL(ncclCommDestroy(comms[g]));
  }
  return 0;
}
