#pragma once
// The host backend (docs/architecture.md, "Executor"): every stream or link of
// every rank this process owns becomes a std::thread; compute runs the kernels
// calibrate times (hostrt/host_kernels.hpp); collectives move real bytes,
// between threads of one process by a rendezvous, between MPI processes by
// point-to-point calls tagged by task. Without mpirun every rank runs in this
// process; under mpirun -n N rank r's resources run in process r mod N and
// process 0 decides what each resource takes next (the engine's rules, one
// lock) and gathers every task's times. All processes must be on one host:
// they share steady_clock.

#include <memory>

#include <moeplan/exec/backend.hpp>

namespace moeplan::exec {

std::unique_ptr<Backend> make_host_backend();

}  // namespace moeplan::exec
