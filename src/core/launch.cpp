#include <moeplan/core/launch.hpp>

#include <cstdlib>
#include <initializer_list>

namespace moeplan {

bool launched_by_mpirun() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(variable) != nullptr) return true;
  return false;
}

}  // namespace moeplan
