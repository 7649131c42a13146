#include "plugins/gpu_nvptx/device_plan.h"

#include <algorithm>

#include "plugins/gpu_nvptx/ptx_compiler.h"
#include "plugins/kernel_plan/kernel_fusion.h"
#include "plugins/llvm_emitter/gpu_layout.h"

namespace kiln::gpu {

KernelLaunches LaunchesFor(const llvm_emit::KernelSpec& spec) {
  using Kind = llvm_emit::GpuLayout::Kind;
  const llvm_emit::GpuLayout layout = llvm_emit::AnalyzeGpuKernel(spec);
  const std::string entry = PtxKernelName(spec.name);
  KernelLaunches k;
  switch (layout.kind) {
    case Kind::kElements: {
      int64_t elements = 0;
      for (const HloInstruction* o : spec.outputs)
        elements = std::max(elements, o->shape().num_elements());
      // Each thread takes vector_width consecutive elements.
      if (elements > 0) k.launches.push_back({entry, elements / layout.vector_width, {}});
      break;
    }
    case Kind::kRows:
      k.launches.push_back({entry, 0, {layout.rows, layout.threads}});
      break;
    case Kind::kSplitReduce:
      k.launches.push_back({entry, 0, {layout.rows * layout.parts, layout.threads}});
      k.launches.push_back(
          {entry + llvm_emit::kGpuCombineSuffix, 0, {layout.rows, layout.threads}});
      k.scratch_bytes = layout.partials_bytes();
      break;
    case Kind::kSplitColumns:
      k.launches.push_back({entry, layout.parts * layout.columns, {}});
      k.launches.push_back({entry + llvm_emit::kGpuCombineSuffix, layout.columns, {}});
      k.scratch_bytes = layout.partials_bytes();
      break;
  }
  return k;
}

LaunchDims DimsOf(const KernelLaunch& l, int64_t max_blocks) {
  if (l.elements > 0) return ComputeLaunchDims(l.elements, max_blocks);
  LaunchDims d = l.dims;
  d.blocks = std::min(d.blocks, std::max<int64_t>(max_blocks, 1));
  return d;
}

DevicePlan MakeDevicePlan(const HloModule& module, const kernel_plan::PlanOptions& options) {
  DevicePlan dp;
  // Fusion decided once, as HLO (kernel-fusion); a copy that does not parse back (it always
  // should) falls back to the planner fusing by itself, which decides the same kernels.
  absl::StatusOr<kernel_plan::Plan> fused = kernel_plan::MakeFusedPlan(module, options);
  dp.plan = fused.ok() ? *std::move(fused) : kernel_plan::MakePlan(module, options);
  for (const llvm_emit::KernelSpec& spec : dp.plan.kernels)
    dp.launches.push_back(LaunchesFor(spec));
  return dp;
}

}  // namespace kiln::gpu
