// A plan prepared for the GPU: cpu-llvm's plan (which instructions are kernels, library
// steps, host steps) plus, per kernel, the launches that run it (llvm_emitter/gpu_layout.h
// decides the thread mapping; both sides read the same analysis). LLVM-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hlo/module.h"
#include "plugins/gpu_nvptx/launch_dims.h"
#include "plugins/kernel_plan/plan.h"

namespace kiln::gpu {

struct KernelLaunch {
  std::string entry;     // the PTX entry
  int64_t elements = 0;  // > 0: one thread per element, ComputeLaunchDims picks the grid
  LaunchDims dims;       // else exactly these; blocks above the grid cap loop in the kernel
};

// How one plan kernel runs: its launches in order, all with the same buffers (inputs,
// outputs, then a scratch buffer of `scratch_bytes` when that is > 0).
struct KernelLaunches {
  std::vector<KernelLaunch> launches;
  int64_t scratch_bytes = 0;
};

KernelLaunches LaunchesFor(const llvm_emit::KernelSpec& spec);

// The launch dimensions of `l` with the grid capped at `max_blocks`.
LaunchDims DimsOf(const KernelLaunch& l, int64_t max_blocks = kMaxBlocks);

struct DevicePlan {
  kernel_plan::Plan plan;
  std::vector<KernelLaunches> launches;  // one per plan.kernels entry
};

DevicePlan MakeDevicePlan(const HloModule& module, const kernel_plan::PlanOptions& options);

}  // namespace kiln::gpu
