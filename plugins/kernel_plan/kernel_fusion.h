// kernel-fusion: the codegen plugins' fusion, decided once and written into the module as HLO
// fusions. Each instruction that gets a kernel of its own takes the instructions generated
// inside that kernel (KernelGroups in plan.h: elementwise chains, broadcasts and the other
// data movement the emitter generates per element, row statistics such as softmax's max and
// sum) into a kLoop/kInput fusion; dots and convolutions that go to a GEMM library stay
// outside, as do control flow and what only the evaluator runs. The planner then consumes
// fusions (PlanOptions::fuse_unfused = false) instead of fusing again, so the module a dump
// shows after this pass is the program the plugin runs: one kernel per fusion or remaining
// instruction. The target policy is the PlanOptions (cpu-llvm's, or gpu-nvptx's layouts).
#pragma once

#include <string_view>

#include "hlo/passes/pass.h"
#include "plugins/kernel_plan/plan.h"

namespace kiln::kernel_plan {

class KernelFusion : public HloPass {
 public:
  explicit KernelFusion(PlanOptions options) : options_(options) {}
  std::string_view name() const override { return "kernel-fusion"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  PlanOptions options_;
};

// Plans `module` with its fusion decided as HLO first: kernel-fusion on a copy, which the
// plan keeps (Plan::fused_module), then MakePlan with fuse_unfused = false. With
// options.fuse_unfused false it is MakePlan. `module_text`, when given, is
// module.ToString() (saves printing it again).
absl::StatusOr<Plan> MakeFusedPlan(const HloModule& module, const PlanOptions& options,
                                   std::string_view module_text = {});

}  // namespace kiln::kernel_plan
