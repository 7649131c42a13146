// Runs across processes over Open MPI: one device per rank, started by `mpirun -np N`.
// mpi.h stays inside mpi_world.cc; a build without Open MPI gets mpi_unavailable.cc, whose
// Init says how to get it.
#pragma once

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "hlo/collectives/communicator.h"

namespace kiln {

// This process's rank and the number of ranks when mpirun (or another MPI launcher) started
// it, read from the launcher's environment; nullopt for a plain start.
struct MpiLaunch {
  int rank = 0;
  int size = 1;
};
std::optional<MpiLaunch> MpiLaunchFromEnvironment();

class MpiWorld {
 public:
  // Initializes MPI (once per process); UNAVAILABLE in a build without Open MPI.
  static absl::StatusOr<std::unique_ptr<MpiWorld>> Init();
  virtual ~MpiWorld() = default;  // finalizes MPI
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The transport for device `rank` of `grid` (which must have size() devices); each
  // collective fails with DEADLINE_EXCEEDED after `timeout_s` without its peers.
  virtual std::unique_ptr<Communicator> MakeCommunicator(DeviceGrid grid, double timeout_s) = 0;
  // Ends every rank of the job (after an error, so that no peer waits for this one).
  [[noreturn]] virtual void Abort(int exit_code) = 0;
};

}  // namespace kiln
