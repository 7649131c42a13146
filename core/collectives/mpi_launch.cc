#include <cstdlib>

#include "absl/strings/numbers.h"
#include "core/collectives/mpi_world.h"

namespace kiln {

std::optional<MpiLaunch> MpiLaunchFromEnvironment() {
  // Open MPI's names first, then the PMI ones MPICH's hydra and Slurm set.
  const char* const pairs[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                  {"PMI_RANK", "PMI_SIZE"}};
  for (const auto& p : pairs) {
    const char* rank = std::getenv(p[0]);
    const char* size = std::getenv(p[1]);
    MpiLaunch l;
    if (rank && size && absl::SimpleAtoi(rank, &l.rank) && absl::SimpleAtoi(size, &l.size) &&
        l.size >= 1 && l.rank >= 0 && l.rank < l.size)
      return l;
  }
  return std::nullopt;
}

}  // namespace kiln
