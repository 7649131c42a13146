// A module compiled for the GPU: its plan (shared with cpu-llvm: which instructions are kernels,
// which fall back to the host HLO evaluator), the PTX of its kernels loaded into the driver,
// and runs on a stream of their own with values resident on the device between kernels
// (device_plan_runner.h) and buffers from the driver's caching allocator. LLVM-free.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "hlo/module.h"
#include "plugins/gpu_nvptx/cublas.h"
#include "plugins/gpu_nvptx/cuda_driver.h"
#include "plugins/gpu_nvptx/device_plan.h"
#include "plugins/gpu_nvptx/device_plan_runner.h"
#include "plugins/gpu_nvptx/nccl_collectives.h"
#include "plugins/kernel_plan/plan.h"

namespace kiln::gpu {

// Unfused f32 dots with batch*m*n*k at least this go to cuBLAS (64^3; not yet measured on a
// GPU: smaller dots are emitted kernels, which avoid the library call's fixed cost).
constexpr int64_t kGpuGemmMinMnk = int64_t{1} << 18;

// How the GPU path plans a module: cpu-llvm's planner without host BLAS calls and without
// CPU thread partitioning; with `device_gemm` (cuBLAS loaded) large f32 dots become GEMM
// library steps, otherwise every dot the emitter can do is a kernel.
kernel_plan::PlanOptions GpuPlanOptions(bool device_gemm = false);

// The module the GPU path plans: with a device GEMM (cuBLAS), large convolutions become
// a patch kernel plus one GEMM (hlo/passes/convolution_to_gemm.h) in a rewritten copy;
// otherwise, or with nothing to rewrite, the module itself.
absl::StatusOr<std::shared_ptr<const HloModule>> PrepareModuleForGpu(
    std::shared_ptr<const HloModule> module, bool device_gemm);

// A device copy of `value` that outlives runs (a plugin buffer), and the way back.
absl::StatusOr<std::shared_ptr<PersistentArray>> UploadArray(CudaDriver& driver,
                                                             const Literal& value);
absl::Status DownloadArray(CudaDriver& driver, const PersistentArray& array, void* dst,
                           size_t bytes);

class GpuExecutable {
 public:
  static absl::StatusOr<std::unique_ptr<GpuExecutable>> Create(
      std::shared_ptr<const HloModule> module, std::shared_ptr<CudaDriver> driver,
      std::shared_ptr<Cublas> cublas = nullptr, std::shared_ptr<Nccl> nccl = nullptr);
  ~GpuExecutable();

  absl::StatusOr<Literal> Run(std::span<const Literal* const> args,
                              DeviceRunStats* stats = nullptr) const;
  // Runs on arrays that may already be on the device and leaves the results there
  // (RunPlanOnDeviceArrays): what plugin buffers use, so steps chain without copies.
  absl::StatusOr<std::vector<RunArray>> RunArrays(std::span<const RunArray> args,
                                                  DeviceRunStats* stats = nullptr) const;
  const kernel_plan::Plan& plan() const { return plan_.plan; }

  const HloModule& module() const { return *module_; }
  const std::string& ptx() const { return ptx_; }

 private:
  GpuExecutable() = default;

  std::shared_ptr<const HloModule> module_;
  std::shared_ptr<CudaDriver> driver_;
  std::shared_ptr<Cublas> cublas_;  // null: dots are kernels
  std::shared_ptr<Nccl> nccl_;      // null: collectives go through the host transport
  DevicePlan plan_;
  std::string ptx_;
  CUmodule cu_module_ = nullptr;
  std::vector<std::vector<CUfunction>> functions_;  // per plan kernel, one per launch
};

}  // namespace kiln::gpu
