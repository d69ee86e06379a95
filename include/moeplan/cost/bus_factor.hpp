#pragma once
// Bus-bandwidth factors, defined once as nccl-tests defines them
// (nccl-tests doc/PERFORMANCE.md): busbw = algbw * factor(p), with algbw =
// size / time. A link's bus bandwidth is what stays constant as the group
// grows, so a line measured at group p0 is moved to group p by scaling its
// per-byte slope by factor(p) / factor(p0).

#include <cstdint>

#include <moeplan/model/specs.hpp>

namespace moeplan::cost {

/// allreduce 2(p-1)/p; allgather, reducescatter, alltoall (p-1)/p; p2p 1; compute 1.
inline double bus_factor(model::OpClass op, std::int64_t group) {
  const double p = static_cast<double>(group);
  switch (op) {
    case model::OpClass::AllReduce:
      return 2.0 * (p - 1.0) / p;
    case model::OpClass::AllGather:
    case model::OpClass::ReduceScatter:
    case model::OpClass::A2A:
      return (p - 1.0) / p;
    default:
      return 1.0;
  }
}

/// True for operations whose size is bytes moved between GPUs.
inline bool is_communication(model::OpClass op) {
  return !model::is_compute_op(op);
}

}  // namespace moeplan::cost
