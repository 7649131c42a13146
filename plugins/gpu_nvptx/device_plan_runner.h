// Runs a plan with values resident on the device: arguments and constants are uploaded once,
// when a kernel first reads them; kernel outputs stay on the device and feed later kernels
// directly; a value crosses back to the host only when a host step needs it (an instruction
// on the host evaluator, a while condition or conditional selector) or it is the result.
// While loops, conditionals and calls run their computations' sub-plans the same way, their
// state passed by reference. A buffer no value refers to any more is reused by the run;
// all go back to the caching allocator when the run ends. Shared by the CUDA path and the
// host emulation test. LLVM-free.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "hlo/module.h"
#include "plugins/gpu_nvptx/caching_allocator.h"
#include "plugins/gpu_nvptx/device_plan.h"
#include "plugins/gpu_nvptx/device_runtime.h"

namespace kiln::gpu {

struct DeviceRunStats {
  int64_t uploads = 0, downloads = 0, launches = 0, gemms = 0;
  int64_t device_collectives = 0;  // collective ops done on device memory (NCCL)
};

// An array kept in device memory between runs (a plugin buffer): its memory goes back to
// the allocator when the last reference goes.
class PersistentArray {
 public:
  PersistentArray(CachingAllocator& alloc, DevicePtr ptr, Shape shape)
      : alloc_(alloc), ptr_(ptr), shape_(std::move(shape)) {}
  ~PersistentArray() { alloc_.Deallocate(ptr_); }
  PersistentArray(const PersistentArray&) = delete;
  PersistentArray& operator=(const PersistentArray&) = delete;
  DevicePtr ptr() const { return ptr_; }
  const Shape& shape() const { return shape_; }

 private:
  CachingAllocator& alloc_;
  DevicePtr ptr_;
  Shape shape_;
};

// An argument or result array of a run, on the host or on the device.
struct RunArray {
  std::shared_ptr<const Literal> host;
  std::shared_ptr<PersistentArray> device;
};

// Runs with arguments that may already be on the device and leaves the result there: returns
// the root's array leaves, depth-first; a leaf only the host has (from a host step) stays
// on the host. Synchronizes before returning, so the results are complete.
absl::StatusOr<std::vector<RunArray>> RunPlanOnDeviceArrays(
    const HloModule& module, const DevicePlan& device_plan, std::span<const RunArray> args,
    DeviceRuntime& runtime, CachingAllocator& allocator, DeviceRunStats* stats = nullptr);

absl::StatusOr<Literal> RunPlanOnDevice(const HloModule& module, const DevicePlan& device_plan,
                                        std::span<const Literal* const> args,
                                        DeviceRuntime& runtime, CachingAllocator& allocator,
                                        DeviceRunStats* stats = nullptr);

}  // namespace kiln::gpu
