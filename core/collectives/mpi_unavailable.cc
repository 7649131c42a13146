// The MpiWorld of a build without Open MPI.
#include "core/collectives/mpi_world.h"

namespace kiln {

absl::StatusOr<std::unique_ptr<MpiWorld>> MpiWorld::Init() {
  return absl::UnavailableError(
      "this kiln was built without Open MPI: install Debian's libopenmpi-dev and openmpi-bin "
      "(./setup.sh does) and build again");
}

}  // namespace kiln
