// What running a plan on a GPU needs from the device: memory (DeviceMemory), and per run a
// stream of copies and kernel launches with a synchronize (DeviceRuntime). The CUDA driver
// implements it (gpu_executable.cc); the host emulation test implements it on the host
// (host memory, kernels run by host threads) so the device-resident run logic is checked
// without a GPU. LLVM-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "hlo/collectives/communicator.h"
#include "plugins/gpu_nvptx/device_collective.h"
#include "plugins/gpu_nvptx/device_plan.h"
#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::gpu {

using DevicePtr = uint64_t;  // 0 is never a valid allocation

// Device memory, stream-independent (the caching allocator sits on it).
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // Out of memory is RESOURCE_EXHAUSTED naming the size.
  virtual absl::StatusOr<DevicePtr> Allocate(size_t bytes) = 0;
  virtual void Deallocate(DevicePtr p) = 0;
};

// One run's queue of work (a stream).
class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  // Queued in order with launches. `src` must stay valid until the next Synchronize.
  virtual absl::Status CopyToDevice(DevicePtr dst, const void* src, size_t bytes) = 0;
  // Waits for the queued work, then copies.
  virtual absl::Status CopyToHost(void* dst, DevicePtr src, size_t bytes) = 0;
  // Queues launch number `entry` of plan kernel number `kernel` (device_plan.h: `l` says
  // its entry and dimensions) with `buffers` (inputs, outputs, scratch) as its arguments.
  virtual absl::Status Launch(int kernel, int entry, const KernelLaunch& l,
                              std::span<const DevicePtr> buffers) = 0;
  // Queues the f32 GEMM `g` (a plan library step): out = op(a) * op(b), all dense
  // row-major, `g.batch` matrices back to back. The CUDA run calls cuBLAS.
  virtual absl::Status Gemm(const kernel_plan::GemmShape& g, DevicePtr a, DevicePtr b,
                            DevicePtr out) = 0;
  virtual absl::Status Synchronize() = 0;
  // Whether Collective below may take collective ops at all (a library is loaded), so the
  // runner uploads and allocates for them only then.
  virtual bool HasCollectives() const { return false; }
  // Runs `op` of a run on several devices on device memory (one array per operand in `ins`
  // and `outs`) through the device's own collective library, done when this returns.
  // `transport` is the run's host communicator. False: not here (no library, a type it
  // cannot take, members sharing a device), nothing done, and the host evaluator runs it.
  virtual absl::StatusOr<bool> Collective(const DeviceCollective& op,
                                          std::span<const DevicePtr> ins,
                                          std::span<const DevicePtr> outs,
                                          Communicator& transport) {
    return false;
  }
};

}  // namespace kiln::gpu
