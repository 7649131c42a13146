// How a device running a module talks to the other devices running it: the transport under
// the collective ops (all-reduce, all-gather, all-to-all, collective-permute, ...). The
// evaluator computes what each op means (replica groups, dimensions, reducers) and moves raw
// bytes through a Communicator; the transport is someone else's: a rendezvous in one process
// (local_communicator.h), Open MPI across processes (core/collectives), or a plugin's own
// (NCCL). The communicator of a run is thread-local: whoever starts a run on a device installs
// it with ScopedCommunicator, and every evaluator step of that run on that thread finds it.
#pragma once

#include <cstddef>
#include <span>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hlo/primitive_type.h"

namespace kiln {

// The elementwise reductions a transport can do natively; others go through AllGather and
// the module's own reducer computation.
enum class ReductionKind { kSum, kProduct, kMin, kMax, kAnd, kOr };

// Which devices run the module: `replicas` x `partitions`, device id = replica * partitions +
// partition (XLA's flattened id).
struct DeviceGrid {
  int replicas = 1;
  int partitions = 1;
  int num_devices() const { return replicas * partitions; }
};

// Every call is collective: each device of `group` (global device ids, in the group's order)
// makes the same call, in the same order as the other calls on the same group. `group` always
// holds the caller.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int device_id() const = 0;  // the caller's global device id
  virtual DeviceGrid grid() const = 0;

  // `out` gets every member's `bytes` of `in`, member i's at offset i * bytes.
  virtual absl::Status AllGather(std::span<const int> group, const void* in, void* out,
                                 size_t bytes) = 0;
  // `out` gets the elementwise reduction over the members of `count` elements of `type`, the
  // same on every member. False when the transport cannot reduce `type` with `kind` (then
  // nothing was sent and the caller gathers instead).
  virtual absl::StatusOr<bool> AllReduce(std::span<const int> group, PrimitiveType type,
                                         ReductionKind kind, const void* in, void* out,
                                         size_t count) = 0;
  // `in` holds group.size() chunks of `chunk_bytes`: chunk i goes to member i; `out` gets
  // member j's chunk for the caller at offset j * chunk_bytes.
  virtual absl::Status AllToAll(std::span<const int> group, const void* in, void* out,
                                size_t chunk_bytes) = 0;
  // `pairs` (source, target) are the same on every device of `group`, which holds every
  // device named in them. The caller sends `in` to the target it is the source of, if any,
  // and receives into `out` from its source; returns whether it had one.
  virtual absl::StatusOr<bool> Permute(std::span<const int> group,
                                       std::span<const std::pair<int, int>> pairs, const void* in,
                                       void* out, size_t bytes) = 0;
};

// The communicator of the current thread's run, or null (a single-device run).
Communicator* CurrentCommunicator();

// Installs `c` for the current thread while it lives (null: none), restoring the previous one.
class ScopedCommunicator {
 public:
  explicit ScopedCommunicator(Communicator* c);
  ~ScopedCommunicator();
  ScopedCommunicator(const ScopedCommunicator&) = delete;
  ScopedCommunicator& operator=(const ScopedCommunicator&) = delete;

 private:
  Communicator* previous_;
};

}  // namespace kiln
