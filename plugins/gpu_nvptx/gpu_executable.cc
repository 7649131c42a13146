// Compiling a module to PTX, loading it, and running the plan with device kernels.
#include "plugins/gpu_nvptx/gpu_executable.h"

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "hlo/computation.h"
#include "hlo/passes/convolution_to_gemm.h"
#include "hlo/text/parser.h"
#include "plugins/gpu_nvptx/device_plan_runner.h"
#include "plugins/gpu_nvptx/ptx_cache.h"
#include "plugins/gpu_nvptx/ptx_compiler.h"
#include "plugins/llvm_emitter/gpu_layout.h"

namespace kiln::gpu {

kernel_plan::PlanOptions GpuPlanOptions(bool device_gemm) {
  kernel_plan::PlanOptions o;
  o.device_gemm_min_mnk = device_gemm ? kGpuGemmMinMnk : 0;
  o.blas_min_mnk = std::numeric_limits<int64_t>::max();
  o.parallel_min_work = std::numeric_limits<int64_t>::max();
  // Long reductions over the trailing dimensions are generated inside their consumers'
  // kernels, which then run a block per row (llvm_emitter/gpu_layout.h): softmax and
  // layernorm become one kernel. Other reduces stay kernels of their own.
  o.inline_row_reductions = true;
  o.row_reduction_filter = llvm_emit::IsGpuRowStatistic;
  o.reduce_parts = 0;  // the GPU layout splits large reductions to a scalar itself
  return o;
}

absl::StatusOr<std::shared_ptr<const HloModule>> PrepareModuleForGpu(
    std::shared_ptr<const HloModule> module, bool device_gemm) {
  if (!device_gemm) return module;
  bool has_conv = false;
  for (const HloComputation* c : module->computations())
    for (const HloInstruction* h : c->instructions())
      has_conv |= h->opcode() == HloOpcode::kConvolution;
  if (!has_conv) return module;
  // The rewrite needs a mutable copy: the text form round-trips exactly.
  absl::StatusOr<std::unique_ptr<HloModule>> copy =
      ParseHloModule(module->ToString(), module->name());
  if (!copy.ok()) return copy.status();
  ConvolutionToGemm rewrite(kGpuGemmMinMnk);
  absl::StatusOr<bool> changed = rewrite.Run(**copy);
  if (!changed.ok()) return changed.status();
  if (!*changed) return module;
  return std::shared_ptr<const HloModule>(std::move(*copy));
}

absl::StatusOr<std::unique_ptr<GpuExecutable>> GpuExecutable::Create(
    std::shared_ptr<const HloModule> module, std::shared_ptr<CudaDriver> driver,
    std::shared_ptr<Cublas> cublas, std::shared_ptr<Nccl> nccl) {
  if (module == nullptr || module->entry() == nullptr)
    return absl::InvalidArgumentError("gpu-nvptx: module has no entry computation");
  std::unique_ptr<GpuExecutable> exe(new GpuExecutable());
  exe->driver_ = std::move(driver);
  exe->cublas_ = std::move(cublas);
  exe->nccl_ = std::move(nccl);
  absl::StatusOr<std::shared_ptr<const HloModule>> prepared =
      PrepareModuleForGpu(std::move(module), exe->cublas_ != nullptr);
  if (!prepared.ok()) return prepared.status();
  exe->module_ = std::move(*prepared);
  exe->plan_ = MakeDevicePlan(*exe->module_, GpuPlanOptions(exe->cublas_ != nullptr));
  PtxOptions opts;
  opts.sm = exe->driver_->TargetSm();
  absl::StatusOr<std::string> ptx = CompilePtxCached(*exe->module_, exe->plan_.plan.kernels, opts);
  if (!ptx.ok()) return ptx.status();
  exe->ptx_ = std::move(*ptx);
  if (exe->plan_.plan.kernels.empty()) return exe;
  if (absl::Status s = exe->driver_->MakeCurrent(); !s.ok()) return s;
  absl::StatusOr<CUmodule> m = exe->driver_->LoadModule(exe->ptx_);
  if (!m.ok()) return m.status();
  exe->cu_module_ = *m;
  for (const KernelLaunches& k : exe->plan_.launches) {
    std::vector<CUfunction>& fs = exe->functions_.emplace_back();
    for (const KernelLaunch& l : k.launches) {
      absl::StatusOr<CUfunction> f = exe->driver_->GetFunction(exe->cu_module_, l.entry);
      if (!f.ok()) return f.status();
      fs.push_back(*f);
    }
  }
  return exe;
}

GpuExecutable::~GpuExecutable() {
  if (cu_module_ != nullptr && driver_->MakeCurrent().ok()) driver_->UnloadModule(cu_module_);
}

namespace {

// One run's stream: copies and launches queued on it, synchronized before results are read.
class CudaRun : public DeviceRuntime {
 public:
  CudaRun(CudaDriver& d, Cublas* cublas, Nccl* nccl,
          const std::vector<std::vector<CUfunction>>& functions)
      : d_(d), cublas_(cublas), nccl_(nccl), functions_(functions) {}
  ~CudaRun() override {
    if (stream_ != nullptr) {
      (void)d_.SynchronizeStream(stream_);  // buffers go back to the cache only when idle
      d_.DestroyStream(stream_);
    }
  }
  absl::Status Start() {
    absl::StatusOr<CUstream> st = d_.CreateStream();
    if (!st.ok()) return st.status();
    stream_ = *st;
    return absl::OkStatus();
  }
  absl::Status CopyToDevice(DevicePtr dst, const void* src, size_t bytes) override {
    return d_.CopyToDeviceAsync(dst, src, bytes, stream_);
  }
  absl::Status CopyToHost(void* dst, DevicePtr src, size_t bytes) override {
    if (absl::Status s = Synchronize(); !s.ok()) return s;
    return d_.CopyToHost(dst, src, bytes);
  }
  absl::Status Launch(int kernel, int entry, const KernelLaunch& l,
                      std::span<const DevicePtr> buffers) override {
    std::vector<CUdeviceptr> args(buffers.begin(), buffers.end());
    std::vector<void*> params;
    for (CUdeviceptr& p : args) params.push_back(&p);
    return d_.Launch(functions_[kernel][entry], l.entry, DimsOf(l), params.data(), stream_);
  }
  absl::Status Gemm(const kernel_plan::GemmShape& g, DevicePtr a, DevicePtr b,
                    DevicePtr out) override {
    if (cublas_ == nullptr) return absl::InternalError("gpu-nvptx: GEMM step without cuBLAS");
    return cublas_->Sgemm(g, a, b, out, stream_);
  }
  bool HasCollectives() const override { return nccl_ != nullptr; }
  absl::StatusOr<bool> Collective(const DeviceCollective& op, std::span<const DevicePtr> ins,
                                  std::span<const DevicePtr> outs,
                                  Communicator& transport) override {
    if (nccl_ == nullptr) return false;
    return nccl_->Run(op, ins, outs, stream_, transport, d_);
  }
  absl::Status Synchronize() override {
    absl::Status s = d_.SynchronizeStream(stream_);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("running the module: ", s.message()));
    return s;
  }

 private:
  CudaDriver& d_;
  Cublas* cublas_;
  Nccl* nccl_;
  const std::vector<std::vector<CUfunction>>& functions_;
  CUstream stream_ = nullptr;
};

}  // namespace

absl::StatusOr<std::shared_ptr<PersistentArray>> UploadArray(CudaDriver& driver,
                                                             const Literal& value) {
  if (absl::Status s = driver.MakeCurrent(); !s.ok()) return s;
  absl::StatusOr<DevicePtr> p =
      driver.allocator().Allocate(std::max<size_t>(value.size_bytes(), 1));
  if (!p.ok()) return p.status();
  auto array = std::make_shared<PersistentArray>(driver.allocator(), *p, value.shape());
  if (absl::Status s = driver.CopyToDevice(*p, value.untyped_data(), value.size_bytes()); !s.ok())
    return s;
  return array;
}

absl::Status DownloadArray(CudaDriver& driver, const PersistentArray& array, void* dst,
                           size_t bytes) {
  if (absl::Status s = driver.MakeCurrent(); !s.ok()) return s;
  return driver.CopyToHost(dst, array.ptr(), bytes);
}

absl::StatusOr<std::vector<RunArray>> GpuExecutable::RunArrays(std::span<const RunArray> args,
                                                               DeviceRunStats* stats) const {
  if (absl::Status s = driver_->MakeCurrent(); !s.ok()) return s;
  CudaRun run(*driver_, cublas_.get(), nccl_.get(), functions_);
  if (absl::Status s = run.Start(); !s.ok()) return s;
  return RunPlanOnDeviceArrays(*module_, plan_, args, run, driver_->allocator(), stats);
}

absl::StatusOr<Literal> GpuExecutable::Run(std::span<const Literal* const> args,
                                           DeviceRunStats* stats) const {
  if (absl::Status s = driver_->MakeCurrent(); !s.ok()) return s;
  CudaRun run(*driver_, cublas_.get(), nccl_.get(), functions_);
  if (absl::Status s = run.Start(); !s.ok()) return s;
  return RunPlanOnDevice(*module_, plan_, args, run, driver_->allocator(), stats);
}

}  // namespace kiln::gpu
