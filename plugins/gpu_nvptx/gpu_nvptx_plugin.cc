// The gpu-nvptx plugin: compiles HLO to PTX kernels with the shared LLVM elemental emitter
// (GPU kernel forms) and runs them through the CUDA driver, which is dlopen'ed at initialize;
// without a driver the plugin reports itself unavailable with the reason (capability
// queries still answer). Instructions the emitter cannot do run on the host HLO evaluator
// and are reported unsupported. Buffers live in GPU memory (the kit's DeviceArray), so
// executions chain without host copies; the C ABI around it comes from the host plugin kit.
#include <optional>
#include <string>

#include "hlo/evaluator/support.h"
#include "plugins/common/host_plugin.h"
#include "plugins/gpu_nvptx/gpu_executable.h"
#include "plugins/kernel_plan/plan.h"

namespace kiln::gpu {
namespace {

// Why a while/conditional/call cannot run wholly on the GPU: the first instruction of its
// computations (nested ones included) that would run on the host evaluator; "" when none.
std::string HostStepInCalledPlans(const kernel_plan::Plan& plan, const kernel_plan::Step& step) {
  for (int c : step.called) {
    for (const kernel_plan::Step& s : plan.called[c].steps) {
      if (s.kind == kernel_plan::Disposition::kEvaluator)
        return "its computation " + plan.called[c].computation->name() + " has " + s.instr->name() +
               " with no GPU kernel (runs on the host evaluator): " + s.why;
      if (s.kind == kernel_plan::Disposition::kControlFlow) {
        std::string why = HostStepInCalledPlans(plan, s);
        if (!why.empty()) return why;
      }
    }
  }
  return "";
}

// A plugin buffer kept in GPU memory.
class GpuArray : public plugin_support::DeviceArray {
 public:
  GpuArray(std::shared_ptr<PersistentArray> array, std::shared_ptr<CudaDriver> driver)
      : array_(std::move(array)), driver_(std::move(driver)) {}
  const Shape& shape() const override { return array_->shape(); }
  absl::Status CopyToHost(void* dst, size_t bytes) const override {
    return DownloadArray(*driver_, *array_, dst, bytes);
  }
  const std::shared_ptr<PersistentArray>& array() const { return array_; }

 private:
  std::shared_ptr<PersistentArray> array_;
  std::shared_ptr<CudaDriver> driver_;
};

class GpuProgram : public plugin_support::HostProgram {
 public:
  GpuProgram(std::unique_ptr<GpuExecutable> exe, std::shared_ptr<CudaDriver> driver)
      : exe_(std::move(exe)), driver_(std::move(driver)) {}
  absl::StatusOr<Literal> Run(std::span<const Literal* const> args) override {
    return exe_->Run(args);
  }
  // Buffers stay on the GPU: arguments are used where they are, results are left there.
  absl::StatusOr<std::vector<plugin_support::BufferArray>> RunBuffers(
      std::vector<plugin_support::BufferArray> args) override {
    std::vector<RunArray> in;
    for (const plugin_support::BufferArray& a : args) {
      auto* gpu = dynamic_cast<const GpuArray*>(a.device.get());
      if (a.device != nullptr && gpu == nullptr)
        return absl::InvalidArgumentError("gpu-nvptx: a buffer of another device");
      in.push_back({a.host, gpu ? gpu->array() : nullptr});
    }
    absl::StatusOr<std::vector<RunArray>> out = exe_->RunArrays(in);
    if (!out.ok()) return out.status();
    std::vector<plugin_support::BufferArray> result;
    for (RunArray& r : *out) {
      if (r.device != nullptr)
        result.push_back({nullptr, std::make_shared<GpuArray>(r.device, driver_)});
      else
        result.push_back({r.host, nullptr});
    }
    return result;
  }

 private:
  std::unique_ptr<GpuExecutable> exe_;
  std::shared_ptr<CudaDriver> driver_;
};

class GpuBackend : public plugin_support::HostBackend {
 public:
  // Loads the driver and, when it has a context, cuBLAS (optional: without it large dots
  // are emitted kernels too).
  GpuBackend() {
    absl::StatusOr<std::unique_ptr<CudaDriver>> d = CudaDriver::Load();
    if (!d.ok()) {
      reason_ = std::string(d.status().message());
      gemm_ = "none (no CUDA driver)";
      collectives_ = "none (no CUDA driver)";
      return;
    }
    driver_ = std::shared_ptr<CudaDriver>(std::move(*d));
    absl::StatusOr<std::unique_ptr<Cublas>> c = absl::UnavailableError("no context");
    if (absl::Status st = driver_->MakeCurrent(); st.ok())
      c = Cublas::Load();
    else
      c = st;
    if (c.ok()) {
      cublas_ = std::shared_ptr<Cublas>(std::move(*c));
      gemm_ = "cuBLAS (" + cublas_->library() + ") for large f32 dots";
    } else {
      gemm_ = "emitted kernels (" + std::string(c.status().message()) + ")";
    }
    absl::StatusOr<std::unique_ptr<Nccl>> n = Nccl::Load();
    if (n.ok()) {
      nccl_ = std::shared_ptr<Nccl>(std::move(*n));
      collectives_ = "NCCL " + nccl_->version() + " (" + nccl_->library() +
                     ") for all-reduce, all-gather and reduce-scatter across GPUs";
    } else {
      collectives_ = "host transport (" + std::string(n.status().message()) + ")";
    }
  }

  // Supported = compiled to kernels (or bookkeeping, or generated inside a user's kernel,
  // or a loop/branch whose computations are); what would run on the host evaluator is
  // unsupported, with why.
  void Capability(
      const HloModule& module,
      const std::function<void(const HloInstruction&, const std::string*)>& report) override {
    kernel_plan::Plan plan = kernel_plan::MakePlan(module, GpuPlanOptions());
    for (const kernel_plan::Step& step : plan.steps) {
      std::string why;
      if (step.kind == kernel_plan::Disposition::kEvaluator) {
        why = "no GPU kernel (runs on the host evaluator): " + step.why;
      } else if (step.kind == kernel_plan::Disposition::kControlFlow) {
        why = HostStepInCalledPlans(plan, step);
      }
      report(*step.instr, why.empty() ? nullptr : &why);
    }
    for (const auto& [instr, d] : plan.dispositions)
      if (d == kernel_plan::Disposition::kInlined) report(*instr, nullptr);
  }

  absl::StatusOr<std::unique_ptr<plugin_support::HostProgram>> Compile(
      std::shared_ptr<const HloModule> module) override {
    if (driver_ == nullptr) return absl::UnavailableError("gpu-nvptx is unavailable: " + reason_);
    // What neither the kernels nor the evaluator fallback runs is refused before the compile.
    if (absl::Status s = CheckEvaluatorRunsAll(*module); !s.ok()) return s;
    auto exe = GpuExecutable::Create(std::move(module), driver_, cublas_, nccl_);
    if (!exe.ok()) return exe.status();
    return std::make_unique<GpuProgram>(std::move(*exe), driver_);
  }

  std::optional<std::string> UnavailableReason() const override {
    if (driver_ != nullptr) return std::nullopt;
    return reason_;
  }
  // The driver's context is made current on the calling thread; queued runs on the kit's
  // worker thread were never tried on a GPU, so asynchronous executes run to the end here.
  bool RunsOnAnyThread() const override { return false; }
  // One GPU (device 0) for now, whatever KILN_HOST_DEVICE_COUNT says.
  int DeviceCount() const override { return 1; }
  // The GPU's memory, not the host's (device_memory_stats' bytes_limit).
  int64_t MemoryLimit() const override { return driver_ ? driver_->total_memory() : -1; }
  std::string DeviceKind() const override {
    return driver_ ? "cuda:" + driver_->device_name() + " (" + driver_->TargetSm() + ")" : "";
  }
  std::vector<std::pair<std::string, std::string>> ExtraAttributes() const override {
    return {{"gemm", gemm_}, {"collectives", collectives_}};
  }
  // Buffers live in GPU memory, so executions chain without host copies.
  absl::StatusOr<std::shared_ptr<plugin_support::DeviceArray>> ToDevice(
      const Literal& value) override {
    if (driver_ == nullptr) return absl::UnavailableError("gpu-nvptx is unavailable: " + reason_);
    absl::StatusOr<std::shared_ptr<PersistentArray>> a = UploadArray(*driver_, value);
    if (!a.ok()) return a.status();
    return std::make_shared<GpuArray>(std::move(*a), driver_);
  }

 private:
  std::shared_ptr<CudaDriver> driver_;  // null without a usable driver and GPU
  std::string reason_;
  std::shared_ptr<Cublas> cublas_;  // null: dots are emitted as kernels
  std::string gemm_;                // how large dots run
  std::shared_ptr<Nccl> nccl_;      // null: collectives go through the host transport
  std::string collectives_;         // how collectives run
};

absl::StatusOr<std::unique_ptr<plugin_support::HostBackend>> MakeBackend() {
  return std::make_unique<GpuBackend>();
}

constexpr plugin_support::HostPluginInfo kInfo = {
    "gpu-nvptx", KILN_PRIORITY_GPU,
    "cuda",      "LLVM NVPTX elemental codegen run through the CUDA driver API",
    MakeBackend, "cuda"};

}  // namespace
}  // namespace kiln::gpu

extern "C" KILN_PLUGIN_EXPORT const KILN_Api* KILN_GetApi(void) {
  return kiln::plugin_support::HostPluginApi(kiln::gpu::kInfo);
}
