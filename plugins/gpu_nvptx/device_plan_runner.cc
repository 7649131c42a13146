#include "plugins/gpu_nvptx/device_plan_runner.h"

#include <map>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "hlo/collectives/communicator.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/kernel_plan/step_values.h"

namespace kiln::gpu {
namespace {

// Device memory of one run. A buffer no value refers to any more goes to this run's free
// list and may serve a later allocation of the run: its kernels are queued in order on one
// stream, so the later kernel runs after every earlier use. Everything goes back to the
// shared caching allocator when the run ends, after its stream is idle.
class RunMemory {
 public:
  explicit RunMemory(CachingAllocator& alloc) : alloc_(alloc) {}
  ~RunMemory() {
    for (const auto& [bytes, p] : free_) alloc_.Deallocate(p);
  }
  absl::StatusOr<DevicePtr> Allocate(size_t bytes) {
    // A free block of at least the size and at most twice it (else a new one: a small value
    // should not pin a large block).
    auto it = free_.lower_bound(bytes);
    if (it != free_.end() && it->first <= 2 * bytes + 256) {
      DevicePtr p = it->second;
      free_.erase(it);
      return p;
    }
    absl::StatusOr<DevicePtr> p = alloc_.Allocate(bytes);
    if (p.ok()) sizes_[*p] = bytes;
    return p;
  }
  void Release(DevicePtr p) { free_.emplace(sizes_.at(p), p); }

 private:
  CachingAllocator& alloc_;
  std::multimap<size_t, DevicePtr> free_;
  absl::flat_hash_map<DevicePtr, size_t> sizes_;
};

// A device buffer shared by the values that refer to it: the run's own (back to the run's
// free list when the last value goes), or a persistent array (an argument, or a result
// handed out by Escape).
struct Buffer {
  Buffer(RunMemory* m, DevicePtr p) : mem(m), ptr(p) {}
  explicit Buffer(std::shared_ptr<PersistentArray> a) : ptr(a->ptr()), array(std::move(a)) {}
  ~Buffer() {
    if (mem != nullptr) mem->Release(ptr);
  }
  RunMemory* mem = nullptr;
  DevicePtr ptr;
  std::shared_ptr<PersistentArray> array;
};

// A value of the run: an array on the device, on the host, or both (after a copy); or a
// tuple of values. A while loop's state passes from one iteration to the next by
// reference, and an iteration's buffers are reused once nothing refers to them.
struct DValue {
  std::shared_ptr<Buffer> dev;
  std::shared_ptr<const Literal> host;
  std::vector<DValue> elements;  // a tuple when neither dev nor host is set
  bool IsTuple() const { return dev == nullptr && host == nullptr; }
};

// A host literal as a value; tuple literals become tuples of their elements (sharing the
// literal's ownership).
DValue FromHost(std::shared_ptr<const Literal> l) {
  DValue v;
  if (!l->IsTuple()) {
    v.host = std::move(l);
    return v;
  }
  for (size_t i = 0; i < l->elements().size(); ++i)
    v.elements.push_back(
        FromHost(std::shared_ptr<const Literal>(l, &l->element(static_cast<int>(i)))));
  return v;
}

class DeviceRun {
 public:
  DeviceRun(const DevicePlan& dp, DeviceRuntime& rt, CachingAllocator& alloc, DeviceRunStats& st)
      : dp_(dp), rt_(rt), mem_(alloc), st_(st) {}

  absl::StatusOr<DValue> RunComputation(const kernel_plan::ComputationPlan& p,
                                        std::vector<DValue> args);

  // The root's leaves for the caller, depth-first: device buffers become persistent arrays
  // (a run buffer leaves the run's free list for good), host-only leaves stay on the host.
  void Escape(const Shape& shape, DValue& v, CachingAllocator& alloc, std::vector<RunArray>& out) {
    if (v.IsTuple()) {
      for (size_t i = 0; i < v.elements.size(); ++i)
        Escape(shape.tuple_shapes(i), v.elements[i], alloc, out);
      return;
    }
    if (v.dev == nullptr) {
      out.push_back({v.host, nullptr});
      return;
    }
    if (v.dev->array == nullptr) {
      v.dev->array = std::make_shared<PersistentArray>(alloc, v.dev->ptr, shape);
      v.dev->mem = nullptr;  // owned by the array from now on
    }
    out.push_back({nullptr, v.dev->array});
  }

  // The value as a literal (arrays downloaded where only the device has them).
  absl::StatusOr<Literal> ToLiteral(const Shape& shape, DValue& v) {
    if (absl::Status s = EnsureHost(shape, v); !s.ok()) return s;
    return kernel_plan::Materialize(ToHostValue(v));
  }

 private:
  using Values = absl::flat_hash_map<const HloInstruction*, DValue>;

  absl::StatusOr<std::shared_ptr<Buffer>> NewBuffer(size_t bytes) {
    absl::StatusOr<DevicePtr> p = mem_.Allocate(bytes);
    if (!p.ok()) return p.status();
    return std::make_shared<Buffer>(&mem_, *p);
  }
  // The device buffer of array value `v`, uploading its host value the first time.
  absl::StatusOr<DevicePtr> EnsureDevice(const HloInstruction* h, DValue& v) {
    if (v.dev != nullptr) return v.dev->ptr;
    if (v.host == nullptr)
      return absl::InternalError(
          absl::StrCat("gpu-nvptx: kernel input ", h->name(), " is not an array"));
    absl::StatusOr<std::shared_ptr<Buffer>> b = NewBuffer(v.host->size_bytes());
    if (!b.ok()) return b.status();
    if (absl::Status s = rt_.CopyToDevice((*b)->ptr, v.host->untyped_data(), v.host->size_bytes());
        !s.ok())
      return s;
    ++st_.uploads;
    v.dev = *b;
    // A constant goes up once per run, not once per loop iteration.
    if (h->opcode() == HloOpcode::kConstant) constants_[h] = v.dev;
    return v.dev->ptr;
  }
  // Makes every array of `v` available on the host, downloading what only the device has.
  absl::Status EnsureHost(const Shape& shape, DValue& v) {
    if (v.IsTuple()) {
      for (size_t i = 0; i < v.elements.size(); ++i)
        if (absl::Status s = EnsureHost(shape.tuple_shapes(i), v.elements[i]); !s.ok()) return s;
      return absl::OkStatus();
    }
    if (v.host != nullptr) return absl::OkStatus();
    Literal l(shape);
    if (absl::Status s = rt_.CopyToHost(l.untyped_data(), v.dev->ptr, l.size_bytes()); !s.ok())
      return s;
    ++st_.downloads;
    v.host = std::make_shared<const Literal>(std::move(l));
    return absl::OkStatus();
  }
  static kernel_plan::Value ToHostValue(const DValue& v) {
    kernel_plan::Value out;
    if (!v.IsTuple()) {
      out.literal = v.host;
      return out;
    }
    for (const DValue& e : v.elements) out.elements.push_back(ToHostValue(e));
    return out;
  }

  absl::Status RunKernel(const kernel_plan::Step& step, Values& values);
  absl::Status RunOnHost(const HloInstruction& h, Values& values);
  absl::StatusOr<bool> RunCollectiveOnDevice(const HloInstruction& h, Values& values);
  absl::Status RunControlFlow(const kernel_plan::Step& step, Values& values);

  const DevicePlan& dp_;
  DeviceRuntime& rt_;
  RunMemory mem_;
  DeviceRunStats& st_;
  HloEvaluator evaluator_;
  absl::flat_hash_map<const HloInstruction*, std::shared_ptr<Buffer>> constants_;
};

absl::StatusOr<DValue> DeviceRun::RunComputation(const kernel_plan::ComputationPlan& p,
                                                 std::vector<DValue> args) {
  Values values;
  for (const kernel_plan::Step& step : p.steps) {
    const HloInstruction* h = step.instr;
    switch (step.kind) {
      case kernel_plan::Disposition::kBookkeeping:
        if (h->opcode() == HloOpcode::kParameter) {
          if (h->parameter_number() < 0 ||
              h->parameter_number() >= static_cast<int64_t>(args.size()))
            return absl::InvalidArgumentError(
                absl::StrCat("parameter ", h->name(), " has no argument"));
          values[h] = args[h->parameter_number()];
        } else if (h->opcode() == HloOpcode::kConstant) {
          absl::StatusOr<const Literal*> lit = kernel_plan::ConstantValue(*h);
          if (!lit.ok()) return lit.status();
          DValue v =
              FromHost(std::shared_ptr<const Literal>(std::shared_ptr<const Literal>(), *lit));
          if (auto it = constants_.find(h); it != constants_.end()) v.dev = it->second;
          values[h] = std::move(v);
        } else if (h->opcode() == HloOpcode::kGetTupleElement) {
          const DValue& t = values.at(h->operand(0));
          if (!t.IsTuple() || h->tuple_index() < 0 ||
              h->tuple_index() >= static_cast<int64_t>(t.elements.size()))
            return absl::InvalidArgumentError(absl::StrCat("bad get-tuple-element ", h->name()));
          values[h] = t.elements[h->tuple_index()];
        } else {  // tuple: the elements, by reference
          DValue t;
          for (const HloInstruction* o : h->operands()) t.elements.push_back(values.at(o));
          values[h] = std::move(t);
        }
        break;
      case kernel_plan::Disposition::kLibrary:
        if (step.gemm && step.gemm->type == kernel_plan::GemmType::kF32 &&
            step.sources.size() == 2) {
          // A large dot: the device GEMM library, operands and result on the device.
          absl::StatusOr<DevicePtr> a = EnsureDevice(step.sources[0], values.at(step.sources[0]));
          if (!a.ok()) return a.status();
          absl::StatusOr<DevicePtr> b = EnsureDevice(step.sources[1], values.at(step.sources[1]));
          if (!b.ok()) return b.status();
          absl::StatusOr<std::shared_ptr<Buffer>> out =
              NewBuffer(static_cast<size_t>(h->shape().byte_size()));
          if (!out.ok()) return out.status();
          if (absl::Status s = rt_.Gemm(*step.gemm, *a, *b, (*out)->ptr); !s.ok()) return s;
          ++st_.gemms;
          values[h].dev = *out;
          break;
        }
        [[fallthrough]];  // other library steps (convolutions) run on the host evaluator
      case kernel_plan::Disposition::kEvaluator: {
        absl::StatusOr<bool> on_device = RunCollectiveOnDevice(*h, values);
        if (!on_device.ok()) return on_device.status();
        if (*on_device) break;
        if (absl::Status s = RunOnHost(*h, values); !s.ok()) return s;
        break;
      }
      case kernel_plan::Disposition::kControlFlow:
        if (absl::Status s = RunControlFlow(step, values); !s.ok()) return s;
        break;
      case kernel_plan::Disposition::kKernel:
        if (absl::Status s = RunKernel(step, values); !s.ok()) return s;
        break;
      case kernel_plan::Disposition::kInlined:
        break;
    }
  }
  DValue root = std::move(values.at(p.computation->root()));
  return root;
}

absl::Status DeviceRun::RunKernel(const kernel_plan::Step& step, Values& values) {
  const llvm_emit::KernelSpec& spec = dp_.plan.kernels[step.kernel];
  std::vector<DevicePtr> buffers;
  for (const HloInstruction* s : step.sources) {
    absl::StatusOr<DevicePtr> p = EnsureDevice(s, values.at(s));
    if (!p.ok()) return p.status();
    buffers.push_back(*p);
  }
  std::vector<std::shared_ptr<Buffer>> outs;
  for (const HloInstruction* o : spec.outputs) {
    absl::StatusOr<std::shared_ptr<Buffer>> b =
        NewBuffer(static_cast<size_t>(o->shape().byte_size()));
    if (!b.ok()) return b.status();
    buffers.push_back((*b)->ptr);
    outs.push_back(*std::move(b));
  }
  const KernelLaunches& kl = dp_.launches[step.kernel];
  std::shared_ptr<Buffer> scratch;  // released (for reuse) when the launches are queued
  if (kl.scratch_bytes > 0) {
    absl::StatusOr<std::shared_ptr<Buffer>> b = NewBuffer(static_cast<size_t>(kl.scratch_bytes));
    if (!b.ok()) return b.status();
    scratch = *std::move(b);
    buffers.push_back(scratch->ptr);
  }
  for (size_t e = 0; e < kl.launches.size(); ++e)
    if (absl::Status s = rt_.Launch(step.kernel, static_cast<int>(e), kl.launches[e], buffers);
        !s.ok())
      return s;
  ++st_.launches;
  DValue v;
  if (step.instr->shape().IsTuple()) {
    for (std::shared_ptr<Buffer>& b : outs) v.elements.push_back(DValue{std::move(b), nullptr, {}});
  } else {
    v.dev = std::move(outs[0]);
  }
  values[step.instr] = std::move(v);
  return absl::OkStatus();
}

absl::Status DeviceRun::RunOnHost(const HloInstruction& h, Values& values) {
  kernel_plan::StepValues host;
  for (const HloInstruction* o : h.operands()) {
    DValue& v = values.at(o);
    if (absl::Status s = EnsureHost(o->shape(), v); !s.ok()) return s;
    host.Set(o, ToHostValue(v));
  }
  if (absl::Status s = host.RunOnEvaluator(h, evaluator_); !s.ok()) return s;
  values[&h] = FromHost(host.value(&h).literal);
  return absl::OkStatus();
}

// A collective op of a run on several devices, on device memory when the runtime's library
// takes it; false leaves it to the host evaluator (and the run's host transport).
absl::StatusOr<bool> DeviceRun::RunCollectiveOnDevice(const HloInstruction& h, Values& values) {
  Communicator* transport = CurrentCommunicator();
  // One device alone (the evaluator's copy is enough), or no collective library.
  if (transport == nullptr || !rt_.HasCollectives()) return false;
  absl::StatusOr<std::optional<DeviceCollective>> op = DescribeDeviceCollective(h, *transport);
  if (!op.ok()) return op.status();
  if (!op->has_value()) return false;
  const DeviceCollective& dc = **op;
  std::vector<DevicePtr> ins, outs;
  std::vector<std::shared_ptr<Buffer>> out_buffers;
  const int64_t element_bytes = ByteSizeOf(dc.type);
  for (size_t i = 0; i < h.operands().size(); ++i) {
    const HloInstruction* o = h.operand(static_cast<int>(i));
    absl::StatusOr<DevicePtr> in = EnsureDevice(o, values.at(o));
    if (!in.ok()) return in.status();
    ins.push_back(*in);
    absl::StatusOr<std::shared_ptr<Buffer>> out =
        NewBuffer(static_cast<size_t>(element_bytes) * dc.out_counts[i]);
    if (!out.ok()) return out.status();
    outs.push_back((*out)->ptr);
    out_buffers.push_back(*std::move(out));
  }
  absl::StatusOr<bool> done = rt_.Collective(dc, ins, outs, *transport);
  if (!done.ok())
    return absl::Status(done.status().code(),
                        absl::StrCat(done.status().message(), " (in ", h.name(), ")"));
  if (!*done) return false;
  ++st_.device_collectives;
  DValue v;
  if (h.shape().IsTuple()) {
    for (std::shared_ptr<Buffer>& b : out_buffers)
      v.elements.push_back(DValue{std::move(b), nullptr, {}});
  } else {
    v.dev = std::move(out_buffers[0]);
  }
  values[&h] = std::move(v);
  return true;
}

absl::Status DeviceRun::RunControlFlow(const kernel_plan::Step& step, Values& values) {
  const HloInstruction* h = step.instr;
  auto annotate = [h](const absl::Status& st) {
    return absl::Status(st.code(), absl::StrCat(st.message(), " (in ", h->name(), ")"));
  };
  // A pred or s32 scalar computed on either side, on the host.
  auto on_host = [&](const HloInstruction* of, DValue& v) -> absl::StatusOr<const Literal*> {
    if (absl::Status s = EnsureHost(of->shape(), v); !s.ok()) return s;
    if (v.IsTuple()) return absl::InternalError("control flow selector is not a scalar");
    return v.host.get();
  };
  const std::vector<kernel_plan::ComputationPlan>& called = dp_.plan.called;
  if (h->opcode() == HloOpcode::kWhile) {
    const kernel_plan::ComputationPlan& cond = called[step.called[0]];
    const kernel_plan::ComputationPlan& body = called[step.called[1]];
    DValue state = values.at(h->operand(0));
    for (;;) {
      absl::StatusOr<DValue> go = RunComputation(cond, {state});
      if (!go.ok()) return annotate(go.status());
      absl::StatusOr<const Literal*> flag = on_host(cond.computation->root(), *go);
      if (!flag.ok()) return annotate(flag.status());
      if (!(*flag)->data<bool>()[0]) break;
      absl::StatusOr<DValue> next = RunComputation(body, {state});
      if (!next.ok()) return annotate(next.status());
      state = *std::move(next);
    }
    values[h] = std::move(state);
    return absl::OkStatus();
  }
  std::vector<DValue> args;
  int sub = step.called[0];
  if (h->opcode() == HloOpcode::kConditional) {
    absl::StatusOr<const Literal*> selector = on_host(h->operand(0), values.at(h->operand(0)));
    if (!selector.ok()) return annotate(selector.status());
    const int64_t branch =
        kernel_plan::ConditionalBranch(**selector, static_cast<int64_t>(step.called.size()));
    sub = step.called[branch];
    args.push_back(values.at(h->operand(branch + 1)));
  } else {  // call
    for (const HloInstruction* o : h->operands()) args.push_back(values.at(o));
  }
  absl::StatusOr<DValue> r = RunComputation(called[sub], std::move(args));
  if (!r.ok()) return annotate(r.status());
  values[h] = *std::move(r);
  return absl::OkStatus();
}

absl::Status CheckArgumentCount(const HloModule& module, size_t n) {
  if (static_cast<int>(n) == module.entry()->num_parameters()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("module ", module.name(), " takes ",
                                                 module.entry()->num_parameters(),
                                                 " arguments, got ", n));
}

}  // namespace

absl::StatusOr<Literal> RunPlanOnDevice(const HloModule& module, const DevicePlan& device_plan,
                                        std::span<const Literal* const> args,
                                        DeviceRuntime& runtime, CachingAllocator& allocator,
                                        DeviceRunStats* stats) {
  const HloComputation* entry = module.entry();
  if (absl::Status s = CheckArgumentCount(module, args.size()); !s.ok()) return s;
  DeviceRunStats local;
  DeviceRun run(device_plan, runtime, allocator, stats ? *stats : local);
  std::vector<DValue> values;
  for (const Literal* a : args)
    values.push_back(FromHost(std::shared_ptr<const Literal>(std::shared_ptr<const Literal>(), a)));
  absl::StatusOr<DValue> root = run.RunComputation(device_plan.plan, std::move(values));
  if (!root.ok()) return root.status();
  return run.ToLiteral(entry->root()->shape(), *root);
}

absl::StatusOr<std::vector<RunArray>> RunPlanOnDeviceArrays(
    const HloModule& module, const DevicePlan& device_plan, std::span<const RunArray> args,
    DeviceRuntime& runtime, CachingAllocator& allocator, DeviceRunStats* stats) {
  const HloComputation* entry = module.entry();
  if (absl::Status s = CheckArgumentCount(module, args.size()); !s.ok()) return s;
  DeviceRunStats local;
  DeviceRun run(device_plan, runtime, allocator, stats ? *stats : local);
  std::vector<DValue> values;
  for (const RunArray& a : args) {
    DValue v;
    if (a.device != nullptr)
      v.dev = std::make_shared<Buffer>(a.device);
    else
      v = FromHost(a.host);
    values.push_back(std::move(v));
  }
  absl::StatusOr<DValue> root = run.RunComputation(device_plan.plan, std::move(values));
  if (!root.ok()) return root.status();
  std::vector<RunArray> out;
  run.Escape(entry->root()->shape(), *root, allocator, out);
  if (absl::Status s = runtime.Synchronize(); !s.ok()) return s;
  return out;
}

}  // namespace kiln::gpu
