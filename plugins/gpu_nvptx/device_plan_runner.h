// Runs a plan with values resident on the device: arguments and constants are uploaded once,
// when a kernel first reads them; kernel outputs stay on the device and feed later kernels
// directly; a value crosses back to the host only when a host step needs it (an instruction
// on the host evaluator, a while condition or conditional selector) or it is the result.
// While loops, conditionals and calls run their computations' sub-plans the same way, their
// state passed by reference. A buffer no value refers to any more is reused by the run;
// all go back to the caching allocator when the run ends. Shared by the CUDA path and the
// host emulation test. LLVM-free.
#pragma once

#include <span>

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "hlo/module.h"
#include "plugins/gpu_nvptx/device_plan.h"
#include "plugins/gpu_nvptx/caching_allocator.h"
#include "plugins/gpu_nvptx/device_runtime.h"

namespace kiln::gpu {

struct DeviceRunStats {
  int64_t uploads = 0, downloads = 0, launches = 0, gemms = 0;
};

absl::StatusOr<Literal> RunPlanOnDevice(const HloModule& module, const DevicePlan& device_plan,
                                        std::span<const Literal* const> args,
                                        DeviceRuntime& runtime, CachingAllocator& allocator,
                                        DeviceRunStats* stats = nullptr);

}  // namespace kiln::gpu
