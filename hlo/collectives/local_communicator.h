// Several devices of one process, each run on its own thread, meeting at a rendezvous: the
// transport for a multi-device run without MPI (XLA's host devices for testing), and the one
// the tests use to run a module on N devices.
#pragma once

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "hlo/collectives/communicator.h"

namespace kiln {

// How long a device waits at a collective for the others before it fails (a device that
// never comes must not hang the rest): KILN_COLLECTIVE_TIMEOUT_S, default 300 s.
double CollectiveTimeoutSeconds();

class LocalRendezvous {
 public:
  LocalRendezvous(DeviceGrid grid, double timeout_s);
  ~LocalRendezvous();
  // The communicator of device `d`; valid while the rendezvous lives.
  std::unique_ptr<Communicator> ForDevice(int d);
  // Fails every collective waiting now or later with `why` (a device of the run failed).
  void Abort(absl::Status why);

  struct State;  // the meetings in progress (local_communicator.cc)

 private:
  std::shared_ptr<State> state_;
  DeviceGrid grid_;
};

// Runs `fn(d)` for every device of `grid` on its own thread, with that device's communicator
// installed (ScopedCommunicator). A device that fails aborts the rendezvous, so the others
// fail at their next collective instead of waiting; returns the first failure in device
// order that is not such a consequence, or OK.
absl::Status RunOnLocalDevices(DeviceGrid grid, const std::function<absl::Status(int)>& fn,
                               double timeout_s = CollectiveTimeoutSeconds());

}  // namespace kiln
