#include "plugins/gpu_nvptx/device_plan_runner.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/cpu_llvm/step_values.h"

namespace kiln::gpu {
namespace {

// The device side of a run's values: an array is one buffer, a kernel's tuple result one
// buffer per element. Every buffer allocated here goes back to the allocator at the end.
class DeviceValues {
 public:
  DeviceValues(DeviceRuntime& rt, CachingAllocator& alloc, cpu::StepValues& host,
               DeviceRunStats& stats)
      : rt_(rt), alloc_(alloc), host_(host), stats_(stats) {}
  ~DeviceValues() {
    for (DevicePtr p : owned_) alloc_.Deallocate(p);
  }

  absl::StatusOr<DevicePtr> NewBuffer(size_t bytes) {
    absl::StatusOr<DevicePtr> p = alloc_.Allocate(bytes);
    if (p.ok()) owned_.push_back(*p);
    return p;
  }
  void Set(const HloInstruction* h, std::vector<DevicePtr> buffers) { dev_[h] = std::move(buffers); }
  bool OnDevice(const HloInstruction* h) const { return dev_.contains(h); }
  const std::vector<DevicePtr>& buffers(const HloInstruction* h) const { return dev_.at(h); }

  // The device buffer of array value `h`, uploading its host value the first time.
  absl::StatusOr<DevicePtr> EnsureDevice(const HloInstruction* h) {
    if (auto it = dev_.find(h); it != dev_.end()) return it->second[0];
    if (!h->shape().IsArray())
      return absl::InternalError(absl::StrCat("gpu-nvptx: kernel input ", h->name(), " is not an array"));
    const Literal* v = host_.at(h);
    absl::StatusOr<DevicePtr> p = NewBuffer(v->size_bytes());
    if (!p.ok()) return p.status();
    if (absl::Status s = rt_.CopyToDevice(*p, v->untyped_data(), v->size_bytes()); !s.ok()) return s;
    ++stats_.uploads;
    dev_[h] = {*p};
    return *p;
  }

  // Makes `h`'s value available to host steps, downloading it when only the device has it.
  absl::Status EnsureHost(const HloInstruction* h) {
    if (host_.contains(h)) return absl::OkStatus();
    auto it = dev_.find(h);
    if (it == dev_.end())
      return absl::InternalError(absl::StrCat("gpu-nvptx: no value for ", h->name()));
    auto download = [&](const Shape& shape, DevicePtr p) -> absl::StatusOr<Literal> {
      Literal l(shape);
      if (absl::Status s = rt_.CopyToHost(l.untyped_data(), p, l.size_bytes()); !s.ok()) return s;
      ++stats_.downloads;
      return l;
    };
    if (!h->shape().IsTuple()) {
      absl::StatusOr<Literal> l = download(h->shape(), it->second[0]);
      if (!l.ok()) return l.status();
      host_.Own(h, std::move(*l));
      return absl::OkStatus();
    }
    std::vector<Literal> elems;
    for (size_t i = 0; i < it->second.size(); ++i) {
      absl::StatusOr<Literal> l = download(h->shape().tuple_shapes(i), it->second[i]);
      if (!l.ok()) return l.status();
      elems.push_back(std::move(*l));
    }
    host_.Own(h, Literal::MakeTuple(std::move(elems)));
    return absl::OkStatus();
  }

 private:
  DeviceRuntime& rt_;
  CachingAllocator& alloc_;
  cpu::StepValues& host_;
  DeviceRunStats& stats_;
  absl::flat_hash_map<const HloInstruction*, std::vector<DevicePtr>> dev_;
  std::vector<DevicePtr> owned_;
};

absl::Status EnsureOperandsOnHost(const HloInstruction& h, DeviceValues& dev) {
  for (const HloInstruction* o : h.operands())
    if (absl::Status s = dev.EnsureHost(o); !s.ok()) return s;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Literal> RunPlanOnDevice(const HloModule& module, const DevicePlan& device_plan,
                                        std::span<const Literal* const> args,
                                        DeviceRuntime& runtime, CachingAllocator& allocator,
                                        DeviceRunStats* stats) {
  const HloComputation* entry = module.entry();
  const cpu::Plan& plan = device_plan.plan;
  if (static_cast<int>(args.size()) != entry->num_parameters())
    return absl::InvalidArgumentError(absl::StrCat("module ", module.name(), " takes ",
                                                   entry->num_parameters(), " arguments, got ",
                                                   args.size()));
  DeviceRunStats local;
  DeviceRunStats& st = stats ? *stats : local;
  cpu::StepValues host;
  HloEvaluator evaluator;
  DeviceValues dev(runtime, allocator, host, st);
  for (const cpu::Step& step : plan.steps) {
    const HloInstruction* h = step.instr;
    switch (step.kind) {
      case cpu::Disposition::kBookkeeping:
        if (h->opcode() == HloOpcode::kGetTupleElement && dev.OnDevice(h->operand(0)) &&
            !host.contains(h->operand(0))) {
          // An element of a kernel's tuple result: the same device buffer, no copy.
          dev.Set(h, {dev.buffers(h->operand(0)).at(h->tuple_index())});
          break;
        }
        if (absl::Status s = EnsureOperandsOnHost(*h, dev); !s.ok()) return s;
        if (absl::Status s = host.RunBookkeeping(*h, args); !s.ok()) return s;
        break;
      case cpu::Disposition::kLibrary:
        if (step.gemm && !step.gemm->f64 && step.sources.size() == 2) {
          // A large dot: the device GEMM library, operands and result on the device.
          absl::StatusOr<DevicePtr> a = dev.EnsureDevice(step.sources[0]);
          if (!a.ok()) return a.status();
          absl::StatusOr<DevicePtr> b = dev.EnsureDevice(step.sources[1]);
          if (!b.ok()) return b.status();
          absl::StatusOr<DevicePtr> out = dev.NewBuffer(static_cast<size_t>(h->shape().byte_size()));
          if (!out.ok()) return out.status();
          if (absl::Status s = runtime.Gemm(*step.gemm, *a, *b, *out); !s.ok()) return s;
          ++st.gemms;
          dev.Set(h, {*out});
          break;
        }
        [[fallthrough]];  // other library steps are not planned for the GPU: the evaluator
      case cpu::Disposition::kControlFlow:  // not planned for the GPU (GpuPlanOptions)
      case cpu::Disposition::kEvaluator:
        if (absl::Status s = EnsureOperandsOnHost(*h, dev); !s.ok()) return s;
        if (absl::Status s = host.RunOnEvaluator(*h, evaluator); !s.ok()) return s;
        break;
      case cpu::Disposition::kKernel: {
        const llvm_emit::KernelSpec& spec = plan.kernels[step.kernel];
        std::vector<DevicePtr> buffers;
        for (const HloInstruction* s : step.sources) {
          absl::StatusOr<DevicePtr> p = dev.EnsureDevice(s);
          if (!p.ok()) return p.status();
          buffers.push_back(*p);
        }
        std::vector<DevicePtr> outs;
        for (const HloInstruction* o : spec.outputs) {
          absl::StatusOr<DevicePtr> p =
              dev.NewBuffer(static_cast<size_t>(o->shape().byte_size()));
          if (!p.ok()) return p.status();
          outs.push_back(*p);
          buffers.push_back(*p);
        }
        const KernelLaunches& kl = device_plan.launches[step.kernel];
        if (kl.scratch_bytes > 0) {
          absl::StatusOr<DevicePtr> p = dev.NewBuffer(static_cast<size_t>(kl.scratch_bytes));
          if (!p.ok()) return p.status();
          buffers.push_back(*p);
        }
        for (size_t e = 0; e < kl.launches.size(); ++e) {
          if (absl::Status s = runtime.Launch(step.kernel, static_cast<int>(e), kl.launches[e], buffers);
              !s.ok())
            return s;
        }
        ++st.launches;
        dev.Set(h, std::move(outs));
        break;
      }
      case cpu::Disposition::kInlined:
        break;
    }
  }
  if (absl::Status s = dev.EnsureHost(entry->root()); !s.ok()) return s;
  return host.TakeResult(entry->root());
}

}  // namespace kiln::gpu
