#pragma once
// How this process was started.

namespace moeplan {

/// True when this process was started by mpirun (Open MPI / PMIx / PMI environment).
bool launched_by_mpirun();

}  // namespace moeplan
