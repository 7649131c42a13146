// A module compiled for the GPU: its plan (shared with cpu-llvm: which instructions are kernels,
// which fall back to the host HLO evaluator), the PTX of its kernels loaded into the driver,
// and a step-by-step run that copies each kernel's inputs to the device and its outputs back.
// This first slice keeps every value on the host between steps. LLVM-free.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "hlo/module.h"
#include "plugins/cpu_llvm/plan.h"
#include "plugins/gpu_nvptx/cuda_driver.h"

namespace kiln::gpu {

// How the GPU path plans a module: cpu-llvm's planner without BLAS library calls (every dot
// the emitter can do becomes a kernel) and without CPU thread partitioning.
cpu::PlanOptions GpuPlanOptions();

// Runs `plan` over `args` in post-order: bookkeeping and evaluator steps on the host, kernel
// steps through `run_kernel` (which fills one Literal per spec output from the step's
// source values). Shared by the driver path and the host emulation test.
using KernelRunner = std::function<absl::Status(const cpu::Step& step,
                                                const std::vector<const Literal*>& inputs,
                                                std::vector<Literal>& outputs)>;
absl::StatusOr<Literal> RunPlan(const HloModule& module, const cpu::Plan& plan,
                                std::span<const Literal* const> args,
                                const KernelRunner& run_kernel);

class GpuExecutable {
 public:
  static absl::StatusOr<std::unique_ptr<GpuExecutable>> Create(
      std::shared_ptr<const HloModule> module, std::shared_ptr<CudaDriver> driver);
  ~GpuExecutable();

  absl::StatusOr<Literal> Run(std::span<const Literal* const> args) const;

  const HloModule& module() const { return *module_; }
  const std::string& ptx() const { return ptx_; }

 private:
  GpuExecutable() = default;
  absl::Status RunKernel(const cpu::Step& step, const std::vector<const Literal*>& inputs,
                         std::vector<Literal>& outputs) const;

  std::shared_ptr<const HloModule> module_;
  std::shared_ptr<CudaDriver> driver_;
  cpu::Plan plan_;
  std::string ptx_;
  CUmodule cu_module_ = nullptr;
  std::vector<CUfunction> functions_;  // one per plan_.kernels entry
};

}  // namespace kiln::gpu
