// Compiling a module to PTX, loading it, and running the plan with device kernels.
#include "plugins/gpu_nvptx/gpu_executable.h"

#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "hlo/computation.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/cpu_llvm/step_values.h"
#include "plugins/gpu_nvptx/ptx_compiler.h"

namespace kiln::gpu {

namespace {
constexpr int kBlockSize = 256;
}  // namespace

cpu::PlanOptions GpuPlanOptions() {
  cpu::PlanOptions o;
  o.blas_min_mnk = std::numeric_limits<int64_t>::max();
  o.parallel_min_work = std::numeric_limits<int64_t>::max();
  // One thread per element: an inlined row statistic would be recomputed by every thread
  // (only the CPU loop nest hoists it), and scalar reductions are not split in parts.
  o.inline_row_reductions = false;
  o.reduce_parts = 0;
  return o;
}

absl::StatusOr<std::unique_ptr<GpuExecutable>> GpuExecutable::Create(
    std::shared_ptr<const HloModule> module, std::shared_ptr<CudaDriver> driver) {
  if (module == nullptr || module->entry() == nullptr)
    return absl::InvalidArgumentError("gpu-nvptx: module has no entry computation");
  std::unique_ptr<GpuExecutable> exe(new GpuExecutable());
  exe->module_ = std::move(module);
  exe->driver_ = std::move(driver);
  exe->plan_ = cpu::MakePlan(*exe->module_, GpuPlanOptions());
  PtxOptions opts;
  opts.sm = exe->driver_->TargetSm();
  absl::StatusOr<std::string> ptx = CompileToPtx(exe->plan_.kernels, opts);
  if (!ptx.ok()) return ptx.status();
  exe->ptx_ = std::move(*ptx);
  if (exe->plan_.kernels.empty()) return exe;
  if (absl::Status s = exe->driver_->MakeCurrent(); !s.ok()) return s;
  absl::StatusOr<CUmodule> m = exe->driver_->LoadModule(exe->ptx_);
  if (!m.ok()) return m.status();
  exe->cu_module_ = *m;
  for (const llvm_emit::KernelSpec& spec : exe->plan_.kernels) {
    absl::StatusOr<CUfunction> f = exe->driver_->GetFunction(exe->cu_module_, PtxKernelName(spec.name));
    if (!f.ok()) return f.status();
    exe->functions_.push_back(*f);
  }
  return exe;
}

GpuExecutable::~GpuExecutable() {
  if (cu_module_ != nullptr && driver_->MakeCurrent().ok()) driver_->UnloadModule(cu_module_);
}

absl::Status GpuExecutable::RunKernel(const cpu::Step& step,
                                      const std::vector<const Literal*>& inputs,
                                      std::vector<Literal>& outputs) const {
  const llvm_emit::KernelSpec& spec = plan_.kernels[step.kernel];
  // Device buffers freed on every path out of here.
  std::vector<CUdeviceptr> bufs;
  struct Freer {
    CudaDriver* d;
    std::vector<CUdeviceptr>* b;
    ~Freer() {
      for (CUdeviceptr p : *b) d->Free(p);
    }
  } freer{driver_.get(), &bufs};
  for (const Literal* in : inputs) {
    absl::StatusOr<CUdeviceptr> p = driver_->Alloc(in->size_bytes());
    if (!p.ok()) return p.status();
    bufs.push_back(*p);
    if (absl::Status s = driver_->CopyToDevice(*p, in->untyped_data(), in->size_bytes()); !s.ok())
      return s;
  }
  int64_t threads = 0;
  for (const HloInstruction* o : spec.outputs) {
    outputs.emplace_back(o->shape());
    absl::StatusOr<CUdeviceptr> p = driver_->Alloc(outputs.back().size_bytes());
    if (!p.ok()) return p.status();
    bufs.push_back(*p);
    threads = std::max(threads, o->shape().num_elements());
  }
  std::vector<void*> params;
  for (CUdeviceptr& p : bufs) params.push_back(&p);
  if (absl::Status s = driver_->LaunchAndWait(functions_[step.kernel], spec.name, threads,
                                              kBlockSize, params.data());
      !s.ok())
    return s;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (absl::Status s = driver_->CopyToHost(outputs[i].untyped_data(), bufs[inputs.size() + i],
                                             outputs[i].size_bytes());
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<Literal> RunPlan(const HloModule& module, const cpu::Plan& plan,
                                std::span<const Literal* const> args,
                                const KernelRunner& run_kernel) {
  const HloComputation* entry = module.entry();
  if (static_cast<int>(args.size()) != entry->num_parameters())
    return absl::InvalidArgumentError(absl::StrCat("module ", module.name(), " takes ",
                                                   entry->num_parameters(), " arguments, got ",
                                                   args.size()));
  cpu::StepValues values;
  HloEvaluator evaluator;
  for (const cpu::Step& step : plan.steps) {
    const HloInstruction* h = step.instr;
    switch (step.kind) {
      case cpu::Disposition::kBookkeeping:
        if (absl::Status st = values.RunBookkeeping(*h, args); !st.ok()) return st;
        break;
      case cpu::Disposition::kLibrary:  // not planned for the GPU; the evaluator is correct
      case cpu::Disposition::kEvaluator:
        // Not a GPU kernel in this slice: the host evaluator computes it.
        if (absl::Status st = values.RunOnEvaluator(*h, evaluator); !st.ok()) return st;
        break;
      case cpu::Disposition::kKernel: {
        std::vector<const Literal*> inputs;
        for (const HloInstruction* s : step.sources) inputs.push_back(values.at(s));
        std::vector<Literal> outs;
        if (absl::Status s = run_kernel(step, inputs, outs); !s.ok()) return s;
        values.OwnOutputs(h, std::move(outs));
        break;
      }
      case cpu::Disposition::kInlined:
        break;
    }
  }
  return values.TakeResult(entry->root());
}

absl::StatusOr<Literal> GpuExecutable::Run(std::span<const Literal* const> args) const {
  if (absl::Status s = driver_->MakeCurrent(); !s.ok()) return s;
  return RunPlan(*module_, plan_, args,
                 [this](const cpu::Step& step, const std::vector<const Literal*>& inputs,
                        std::vector<Literal>& outputs) { return RunKernel(step, inputs, outputs); });
}

}  // namespace kiln::gpu
