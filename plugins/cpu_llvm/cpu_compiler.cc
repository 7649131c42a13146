// Compilation with caching, and running a compiled module step by step.
#include "plugins/cpu_llvm/cpu_compiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "hlo/computation.h"
#include "hlo/dump/dump.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/common/length_prefixed.h"
#include "plugins/cpu_llvm/blas_dot.h"
#include "plugins/cpu_llvm/flush_denormals.h"
#include "plugins/cpu_llvm/library_step.h"
#include "plugins/cpu_llvm/scatter_rows.h"
#include "plugins/kernel_plan/kernel_fusion.h"
#include "plugins/kernel_plan/step_values.h"

namespace kiln::cpu {

namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}
uint64_t HashString(uint64_t h, std::string_view s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return Mix(h, s.size());
}

}  // namespace

uint64_t StructuralHash(const HloModule& module) {
  uint64_t h = 1469598103934665603ull;
  for (const HloComputation* comp : module.MakeComputationPostOrder()) {
    h = HashString(h, comp->name());
    h = Mix(h, comp == module.entry());
    for (const HloInstruction* i : comp->MakeInstructionPostOrder()) {
      h = HashString(h, i->name());
      h = Mix(h, static_cast<uint64_t>(i->opcode()));
      h = HashString(h, i->shape().ToString());
      for (const HloInstruction* o : i->operands()) h = HashString(h, o->name());
      for (const HloComputation* c : i->called_computations()) h = HashString(h, c->name());
      const InstructionAttributes& a = i->attrs();
      h = Mix(h, a.parameter_number);
      h = Mix(h, a.tuple_index);
      h = Mix(h, a.iota_dimension);
      for (int64_t d : a.dimensions) h = Mix(h, d);
      for (int64_t d : a.slice_starts) h = Mix(h, d);
      for (int64_t d : a.slice_limits) h = Mix(h, d);
      for (int64_t d : a.slice_strides) h = Mix(h, d);
      for (const PaddingDimension& p : a.padding_config)
        h = Mix(Mix(Mix(h, p.edge_padding_low), p.edge_padding_high), p.interior_padding);
      if (a.comparison_direction) h = Mix(h, 100 + static_cast<int>(*a.comparison_direction));
      if (a.dot_dimension_numbers) {
        const DotDimensionNumbers& d = *a.dot_dimension_numbers;
        for (const auto* v : {&d.lhs_batch_dimensions, &d.rhs_batch_dimensions,
                              &d.lhs_contracting_dimensions, &d.rhs_contracting_dimensions}) {
          h = Mix(h, v->size());
          for (int64_t x : *v) h = Mix(h, x);
        }
      }
      if (a.literal && !a.literal->IsTuple()) {
        h = HashString(h, std::string_view(reinterpret_cast<const char*>(a.literal->untyped_data()),
                                           a.literal->size_bytes()));
      }
      for (const auto& [k, v] : a.extra) h = HashString(HashString(h, k), v);
    }
  }
  return h;
}

CpuExecutable::CpuExecutable(std::shared_ptr<const HloModule> module, Plan plan,
                             std::vector<KernelFn> kernels, std::shared_ptr<CpuJit> jit,
                             std::string ir, std::shared_ptr<ThreadPool> pool,
                             int64_t parallel_min_work, ArenaLayout arena, FlatLoops flat_loops)
    : module_(std::move(module)),
      plan_(std::move(plan)),
      kernels_(std::move(kernels)),
      jit_(std::move(jit)),
      ir_(std::move(ir)),
      pool_(std::move(pool)),
      parallel_min_work_(parallel_min_work),
      profile_(StepProfile::FromEnv(module_->name())),
      arena_(std::move(arena)),
      flat_loops_(std::move(flat_loops)) {
  auto find_row_scatters = [this](const ComputationPlan& p) {
    for (const Step& step : p.steps)
      if (step.kind == Disposition::kEvaluator && IsRowScatter(*step.instr))
        row_scatters_.insert(step.instr);
  };
  find_row_scatters(plan_);
  for (const ComputationPlan& p : plan_.called) find_row_scatters(p);
}

std::shared_ptr<uint8_t> CpuExecutable::AcquireArena() const {
  if (arena_.size == 0) return nullptr;
  {
    std::lock_guard<std::mutex> lock(arena_mu_);
    if (!free_arenas_.empty()) {
      std::shared_ptr<uint8_t> a = std::move(free_arenas_.back());
      free_arenas_.pop_back();
      return a;
    }
  }
  constexpr std::align_val_t kAlign{64};
  return std::shared_ptr<uint8_t>(
      static_cast<uint8_t*>(::operator new(static_cast<size_t>(arena_.size), kAlign)),
      [](uint8_t* p) { ::operator delete(p, kAlign); });
}

void CpuExecutable::ReturnArena(std::shared_ptr<uint8_t> arena) const {
  // Kept for the next run unless a value still refers to it; a few for concurrent runs.
  constexpr size_t kKept = 4;
  if (arena == nullptr || arena.use_count() != 1) return;
  std::lock_guard<std::mutex> lock(arena_mu_);
  if (free_arenas_.size() < kKept) free_arenas_.push_back(std::move(arena));
}

Literal CpuExecutable::ResultBuffer(const HloInstruction* h, const std::shared_ptr<uint8_t>& arena,
                                    int64_t index) const {
  const Shape& shape = index < 0 ? h->shape() : h->shape().tuple_shapes(static_cast<int>(index));
  const int64_t offset = index < 0 ? arena_.OffsetOf(h) : arena_.ElementOffsetOf(h, index);
  if (arena != nullptr && offset >= 0) return Literal::Adopt(shape, arena.get() + offset, arena);
  return Literal::Uninitialized(shape);  // its producer writes every element
}

std::vector<std::string> CpuExecutable::NativeInstructions() const {
  std::vector<std::string> out;
  for (const auto& [h, d] : plan_.dispositions)
    if (d == Disposition::kKernel || d == Disposition::kInlined || d == Disposition::kLibrary)
      out.push_back(h->name());
  return out;
}

absl::StatusOr<Literal> CpuExecutable::Run(std::span<const Literal> args) const {
  std::vector<const Literal*> ptrs;
  for (const Literal& a : args) ptrs.push_back(&a);
  return Run(std::span<const Literal* const>(ptrs));
}

absl::StatusOr<Literal> CpuExecutable::Run(std::span<const Literal* const> args) const {
  std::vector<Value> values;
  values.reserve(args.size());
  for (const Literal* a : args) values.push_back(Value::Borrowed(a));
  return RunEntry(std::move(values));
}

absl::StatusOr<Literal> CpuExecutable::RunShared(
    std::vector<std::shared_ptr<const Literal>> args) const {
  std::vector<Value> values;
  values.reserve(args.size());
  for (std::shared_ptr<const Literal>& a : args) values.push_back(Value::Shared(std::move(a)));
  return RunEntry(std::move(values));
}

absl::StatusOr<Literal> CpuExecutable::RunEntry(std::vector<Value> values) const {
  ScopedFlushDenormals flush;  // the pool's workers flush too (thread_pool.cc)
  if (profile_) profile_->BeginRun();
  const HloComputation* entry = module_->entry();
  if (static_cast<int>(values.size()) != entry->num_parameters())
    return absl::InvalidArgumentError(absl::StrCat("module ", module_->name(), " takes ",
                                                   entry->num_parameters(), " arguments, got ",
                                                   values.size()));
  for (int i = 0; i < entry->num_parameters(); ++i) {
    const Literal* a = values[i].literal.get();
    if (a == nullptr || !a->shape().Compatible(entry->parameter(i)->shape()))
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", i, " of module ", module_->name(), " has shape ",
                       (a ? a->shape().ToString(false) : std::string("null")),
                       ", the parameter wants ", entry->parameter(i)->shape().ToString(false)));
  }
  HloEvaluator evaluator;
  std::shared_ptr<uint8_t> arena;
  try {
    arena = AcquireArena();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory for the temporaries of ",
                                                     module_->name(), " (", arena_.Summary(), ")"));
  }
  absl::StatusOr<Value> root = RunComputation(plan_, std::move(values), evaluator, arena);
  if (!root.ok()) return root.status();
  Literal result = Materialize(*std::move(root));
  ReturnArena(std::move(arena));
  return result;
}

absl::StatusOr<Value> CpuExecutable::RunComputation(const ComputationPlan& p,
                                                    std::vector<Value> args,
                                                    HloEvaluator& evaluator,
                                                    const std::shared_ptr<uint8_t>& arena,
                                                    StepValues* scratch) const {
  StepValues local;
  StepValues& values = scratch != nullptr ? *scratch : local;
  values.Clear();  // left over from a run that failed
  for (const Step& step : p.steps) {
    const HloInstruction* h = step.instr;
    const auto start =
        profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    // A buffer that does not fit is this step's error, named, not a bare std::bad_alloc.
    try {
      switch (step.kind) {
        case Disposition::kBookkeeping:
          if (absl::Status st = values.RunBookkeeping(*h, args, step.moves_element); !st.ok())
            return st;
          break;
        case Disposition::kEvaluator:
          if (row_scatters_.contains(h)) {  // natively, on the pool (scatter_rows.h)
            std::optional<Literal> table = TakeScatterOperand(step, values, arena);
            if (!table) table = Literal(*values.at(h->operand(0)));
            RunRowScatter(*h, *table, *values.at(h->operand(1)), *values.at(h->operand(2)),
                          pool_.get());
            values.Own(h, *std::move(table));
            break;
          }
          if (std::optional<Literal> table = TakeScatterOperand(step, values, arena)) {
            absl::Status st = evaluator.ScatterInPlace(*h, *table, *values.at(h->operand(1)),
                                                       *values.at(h->operand(2)));
            if (!st.ok()) return st;
            values.Own(h, *std::move(table));
            break;
          }
          if (absl::Status st = values.RunOnEvaluator(*h, evaluator); !st.ok()) return st;
          break;
        case Disposition::kControlFlow:
          if (absl::Status st = RunControlFlow(step, values, evaluator, arena); !st.ok()) return st;
          break;
        case Disposition::kKernel:
          RunKernel(step, values, arena);
          break;
        case Disposition::kLibrary: {
          // An array result into a buffer of its own, a tuple's elements zeroed.
          Literal out = h->shape().IsArray() ? ResultBuffer(h, arena) : Literal(h->shape());
          std::vector<const Literal*> operands;
          for (const HloInstruction* op : step.sources) operands.push_back(values.at(op));
          if (absl::Status st = RunLibraryStep(step, operands, out, kernels_, pool_.get());
              !st.ok())
            return st;
          values.Own(h, std::move(out));
          break;
        }
        case Disposition::kInlined:
          break;
      }
      for (const HloInstruction* dead : step.last_uses) values.Release(dead);
      if (profile_ && step.kind != Disposition::kInlined &&
          step.kind != Disposition::kBookkeeping) {
        profile_->Add(h, row_scatters_.contains(h) ? "row-scatter" : DispositionName(step.kind),
                      std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count());
      }
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of memory producing ", h->shape().ToString(false), " (",
                       h->shape().IsArray() ? h->shape().byte_size() : 0, " bytes, instruction %",
                       h->name(), ")"));
    }
  }
  return values.TakeValue(p.computation->root());
}

std::optional<Literal> CpuExecutable::TakeScatterOperand(
    const Step& step, StepValues& values, const std::shared_ptr<uint8_t>& arena) const {
  const HloInstruction* h = step.instr;
  if (h->opcode() != HloOpcode::kScatter || h->operand_count() != 3 || !h->shape().IsArray() ||
      IsSubByteInt(h->shape().element_type()))
    return std::nullopt;
  const HloInstruction* operand = h->operand(0);
  if (operand == h->operand(1) || operand == h->operand(2) || !step.IsLastUse(operand) ||
      (arena != nullptr && arena_.OffsetOf(operand) >= 0) || !values.contains(operand))
    return std::nullopt;
  return values.TakeIfOnlyOwner(operand);
}

void CpuExecutable::RunKernel(const Step& step, StepValues& values,
                              const std::shared_ptr<uint8_t>& arena) const {
  const llvm_emit::KernelSpec& spec = plan_.kernels[step.kernel];
  // Inline storage: a loop body runs its small kernels thousands of times.
  absl::InlinedVector<void*, 16> buffers;
  absl::InlinedVector<Literal, 2> outs;
  if (step.in_place_source >= 0) {
    // The kernel writes only the update: its output starts as the operand, whose buffer is
    // taken when no later step reads it (a while loop's state row by row), else copied.
    const HloInstruction* operand = step.sources[step.in_place_source];
    if (arena != nullptr && arena_.OffsetOf(step.instr) >= 0) {
      // The result's place in the arena; the assignment may have put it on the operand.
      outs.push_back(ResultBuffer(step.instr, arena));
      const Literal* in = values.at(operand);
      if (in->untyped_data() != outs[0].untyped_data())
        std::memcpy(outs[0].untyped_data(), in->untyped_data(), in->size_bytes());
    } else if (arena != nullptr && arena_.OffsetOf(operand) >= 0) {
      outs.push_back(Literal(*values.at(operand)));  // the arena's buffer stays where it is
    } else {
      outs.push_back(values.TakeOrCopy(operand, step.IsLastUse(operand)));
    }
  }
  // An output not in the arena is written over a source the kernel reads only at the
  // output's own index, when this step is the source's last reader and the run owns it
  // alone (a donated argument: the output lives where the argument did).
  int over = -1;
  if (step.in_place_source < 0 && !(arena != nullptr && arena_.OffsetOf(step.instr) >= 0)) {
    for (int i : step.output_over_sources) {
      const HloInstruction* s = step.sources[i];
      if (!step.IsLastUse(s) || (arena != nullptr && arena_.OffsetOf(s) >= 0)) continue;
      if (std::optional<Literal> taken = values.TakeIfOnlyOwner(s)) {
        outs.push_back(*std::move(taken));
        over = i;
        break;
      }
    }
  }
  for (size_t i = 0; i < step.sources.size(); ++i) {
    const HloInstruction* s = step.sources[i];
    const bool in_place = step.in_place_source >= 0 && s == step.sources[step.in_place_source];
    buffers.push_back(in_place || static_cast<int>(i) == over
                          ? outs[0].untyped_data()  // the output's own buffer
                          : const_cast<uint8_t*>(values.at(s)->untyped_data()));
  }
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    if (step.in_place_source < 0 && over < 0) {
      // A kernel writes every element.
      const Shape& shape = step.instr->shape();
      outs.push_back(shape.IsArray() ? ResultBuffer(step.instr, arena)
                     : shape.tuple_size() == static_cast<int64_t>(spec.outputs.size())
                         ? ResultBuffer(step.instr, arena, static_cast<int64_t>(i))
                         : Literal::Uninitialized(spec.outputs[i]->shape()));
    }
    buffers.push_back(outs.back().untyped_data());
  }
  // A two-stage reduction: parts in parallel into `partials`, then the combining call.
  std::optional<Literal> partials;
  if (step.reduce_parts > 0) {
    partials = Literal::Uninitialized(llvm_emit::PartialsShape(spec));
    buffers.push_back(partials->untyped_data());
  }
  CallKernel(KernelContextOf(), step, buffers.data());
  values.OwnOutputs(step.instr, std::span<Literal>(outs.data(), outs.size()));
}

absl::Status CpuExecutable::RunControlFlow(const Step& step, StepValues& values,
                                           HloEvaluator& evaluator,
                                           const std::shared_ptr<uint8_t>& arena) const {
  const HloInstruction* h = step.instr;
  auto annotate = [h](const absl::Status& st) {
    return absl::Status(st.code(), absl::StrCat(st.message(), " (in ", h->name(), ")"));
  };
  if (h->opcode() == HloOpcode::kWhile) {
    const ComputationPlan& cond = plan_.called[step.called[0]];
    const ComputationPlan& body = plan_.called[step.called[1]];
    // The state's elements pass from one iteration to the next by reference: an element the
    // body returns unchanged is not copied, and one it replaces is freed.
    // The body takes the state over, so an element only it holds can be updated in place;
    // so does the loop from its operand when nothing after it reads that.
    Value state =
        step.IsLastUse(h->operand(0)) ? values.Take(h->operand(0)) : values.value(h->operand(0));
    if (auto flat = flat_loops_.find(h); flat != flat_loops_.end()) {
      absl::StatusOr<Value> out = flat->second->Run(std::move(state), KernelContextOf());
      if (!out.ok()) return annotate(out.status());
      values.Set(h, *std::move(out));
      return absl::OkStatus();
    }
    StepValues cond_values, body_values;  // kept from one iteration to the next
    for (;;) {
      absl::StatusOr<Value> go = RunComputation(cond, {state}, evaluator, arena, &cond_values);
      if (!go.ok()) return annotate(go.status());
      if (go->literal == nullptr || go->literal->IsTuple())
        return annotate(absl::InternalError("while condition did not return a pred scalar"));
      if (!go->literal->data<bool>()[0]) break;
      std::vector<Value> in;
      in.push_back(std::move(state));
      absl::StatusOr<Value> next =
          RunComputation(body, std::move(in), evaluator, arena, &body_values);
      if (!next.ok()) return annotate(next.status());
      state = *std::move(next);
    }
    values.Set(h, std::move(state));
    return absl::OkStatus();
  }
  std::vector<Value> args;
  int sub = step.called[0];
  if (h->opcode() == HloOpcode::kConditional) {
    const int64_t branch =
        ConditionalBranch(*values.at(h->operand(0)), static_cast<int64_t>(step.called.size()));
    sub = step.called[branch];
    args.push_back(values.value(h->operand(branch + 1)));
  } else {  // call
    for (const HloInstruction* o : h->operands()) args.push_back(values.value(o));
  }
  absl::StatusOr<Value> r = RunComputation(plan_.called[sub], std::move(args), evaluator, arena);
  if (!r.ok()) return annotate(r.status());
  values.Set(h, *std::move(r));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CpuCompiler>> CpuCompiler::Create(const CompileOptions& options) {
  absl::StatusOr<std::unique_ptr<CpuJit>> jit = CpuJit::Create(options.jit);
  if (!jit.ok()) return jit.status();
  int threads = options.threads > 0 ? options.threads : DefaultThreadCount();
  UseSingleThreadedBlas();
  std::unique_ptr<CpuCompiler> compiler(
      new CpuCompiler(options, std::move(*jit), std::make_shared<ThreadPool>(threads)));
  // Decided once, so the object cache key says what the compiles do.
  if (const char* env = std::getenv("KILN_CPU_SIBLING_FUSION");
      env != nullptr && std::string_view(env) == "0")
    compiler->options_.plan.merge_sibling_kernels = false;
  if (const char* env = std::getenv("KILN_CPU_PRODUCER_FUSION");
      env != nullptr && std::string_view(env) == "0")
    compiler->options_.plan.merge_producer_kernels = false;
  if (!options.cache_dir.has_value())
    compiler->object_cache_ = DiskCache::FromEnv("KILN_CPU_CACHE_DIR");
  else if (!options.cache_dir->empty())
    compiler->object_cache_.emplace(*options.cache_dir);
  return compiler;
}

CompileStats CpuCompiler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return CompileStats{plan_ms_, jit_->stats()};
}

// Everything the objects depend on: the compiling binary, LLVM, target and options, and the
// module text (the cache stores the whole key, so it is compared, not just hashed).
std::string CpuCompiler::ObjectCacheKey(const std::string& text) const {
  const PlanOptions& p = options_.plan;
  return absl::StrCat(
      "cpu-llvm objects\nbinary=", BinaryIdentity(reinterpret_cast<const void*>(&StructuralHash)),
      "\n", jit_->CacheKey(), "\nplan=", p.fuse_unfused, ",", p.blas_min_mnk, ",",
      p.parallel_min_work, ",", p.native_control_flow, ",", p.update_in_place, ",",
      p.accumulate_columns, ",", p.merge_sibling_kernels, ",", p.merge_producer_kernels, ",",
      p.s8_gemm, ",", p.native_sort, ",", p.complex_kernels, ",", p.integer_gemm, ",", p.bf16_gemm,
      "\n", text);
}

absl::StatusOr<std::shared_ptr<const CpuExecutable>> CpuCompiler::Compile(
    std::shared_ptr<const HloModule> module, const DumpRequest& dump) {
  return CompileOrLoad(std::move(module), dump, nullptr, nullptr);
}

namespace {

constexpr std::string_view kSerializedMagic = "cpu-llvm executable 1\n";

bool EnvOff(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string_view(v) == "0";
}

// The plan's while loops that run flat, in plan order (drivers are named in this order, so a
// loaded executable finds the same names); none with KILN_CPU_FLAT_LOOPS=0.
std::vector<std::pair<const HloInstruction*, std::unique_ptr<FlatLoop>>> MakeFlatLoops(
    const Plan& plan) {
  std::vector<std::pair<const HloInstruction*, std::unique_ptr<FlatLoop>>> out;
  if (EnvOff("KILN_CPU_FLAT_LOOPS")) return out;
  auto add = [&](const ComputationPlan& p) {
    for (const Step& step : p.steps)
      if (step.kind == Disposition::kControlFlow && step.instr->opcode() == HloOpcode::kWhile)
        if (std::unique_ptr<FlatLoop> loop = FlatLoop::Make(step, plan))
          out.emplace_back(step.instr, std::move(loop));
  };
  add(plan);
  for (const ComputationPlan& p : plan.called) add(p);
  return out;
}

// Why two object keys (ObjectCacheKey) differ, from their first differing line: the build,
// the target and options, the plan options, or the module.
std::string KeyMismatch(std::string_view saved, std::string_view ours) {
  auto line = [](std::string_view s, size_t i) {
    for (; i > 0; --i) s.remove_prefix(std::min(s.size(), s.find('\n') + 1));
    return std::string(s.substr(0, s.find('\n')));
  };
  for (size_t i = 0;; ++i) {
    const std::string a = line(saved, i), b = line(ours, i);
    if (a == b && !a.empty()) continue;
    if (b.starts_with("binary="))
      return absl::StrCat("it was saved by another build of cpu-llvm (", a, ", this is ", b, ")");
    if (b.starts_with("llvm"))
      return absl::StrCat("it was compiled for another target or with other options (", a,
                          "; this process: ", b, ")");
    if (b.starts_with("plan=") || b.starts_with("fusion="))
      return absl::StrCat("it was planned with other options (", a, "; now ", b, ")");
    return "it was saved from another module";
  }
}

}  // namespace

std::string CpuExecutable::Serialize() const {
  std::string out(kSerializedMagic);
  const std::string packed = PackObjects(objects_);
  absl::StrAppend(&out, objects_key_.size(), "\n", objects_key_, packed.size(), "\n", packed);
  return out;
}

absl::StatusOr<std::shared_ptr<const CpuExecutable>> CpuCompiler::Load(
    std::shared_ptr<const HloModule> module, std::string_view bytes) {
  auto damaged = [](const std::string& why) {
    return absl::DataLossError(
        absl::StrCat("cpu-llvm: the serialized executable is damaged (", why, ")"));
  };
  if (!bytes.starts_with(kSerializedMagic))
    return damaged("it does not start with cpu-llvm's header");
  bytes.remove_prefix(kSerializedMagic.size());
  std::string_view key, packed;
  if (!plugin_support::TakeLengthPrefixed(bytes, &key) ||
      !plugin_support::TakeLengthPrefixed(bytes, &packed) || !bytes.empty())
    return damaged("truncated or too long");
  std::optional<std::vector<std::string>> objects = UnpackObjects(packed);
  if (!objects) return damaged("its objects are malformed");
  const std::string saved_key(key);
  return CompileOrLoad(std::move(module), DumpRequest(), &*objects, &saved_key);
}

absl::StatusOr<std::shared_ptr<const CpuExecutable>> CpuCompiler::CompileOrLoad(
    std::shared_ptr<const HloModule> module, const DumpRequest& dump,
    const std::vector<std::string>* objects, const std::string* expected_key) {
  if (module == nullptr || module->entry() == nullptr)
    return absl::InvalidArgumentError("cpu-llvm: module has no entry computation");
  uint64_t key = Mix(module->Fingerprint(), StructuralHash(*module));
  std::string text = module->ToString();
  std::lock_guard<std::mutex> lock(mu_);
  // A load is checked against this process's key, so it never takes a cached executable.
  auto it = objects == nullptr ? cache_.find(key) : cache_.end();
  if (it != cache_.end()) {
    for (const auto& [source, exe] : it->second) {
      if (source == text) {
        ++hits_;
        return exe;
      }
    }
  }
  ++misses_;
  auto t0 = std::chrono::steady_clock::now();
  // The plugin's own pass: fusion decided once, as HLO, then planned as it stands.
  PlanOptions plan_options = options_.plan;
  const char* fusion_env = std::getenv("KILN_CPU_FUSION");
  const bool planner_fuses = fusion_env != nullptr && std::string_view(fusion_env) == "planner";
  const bool hlo_fusion = options_.fuse_as_hlo && !planner_fuses && plan_options.fuse_unfused;
  absl::StatusOr<Plan> made = hlo_fusion ? MakeFusedPlan(*module, plan_options, text)
                                         : absl::StatusOr<Plan>(MakePlan(*module, plan_options));
  if (!made.ok()) return made.status();
  Plan plan = *std::move(made);
  // The module the plan refers to: after kernel-fusion, the program that runs.
  std::shared_ptr<const HloModule> planned = plan.fused_module ? plan.fused_module : module;
  if (plan.fused_module && !dump.dir.empty()) {
    absl::Status s = DumpModule(*planned, dump.dir, "", "cpu-llvm.kernel-fusion", dump.sequence);
    if (!s.ok()) return s;
  }
  plan_ms_ +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Debugging aid: every computation's dispositions (kernel, control-flow, evaluator, ...).
  if (const char* dump = std::getenv("KILN_CPU_DUMP_PLAN"); dump != nullptr && *dump != '\0')
    std::fprintf(stderr, "cpu-llvm plan of %s:\n%s", module->name().c_str(),
                 PlanToString(plan, [](const HloInstruction& h, Disposition d) {
                   // The runner takes these evaluator steps natively (as the profile says).
                   return d == Disposition::kEvaluator && IsRowScatter(h)
                              ? std::string("row-scatter")
                              : std::string(DispositionName(d));
                 }).c_str());
  std::string ir;
  JitRequest request;
  request.ir_out = options_.keep_ir ? &ir : nullptr;
  request.pool = pool_.get();
  // Kernels differ by who fused them (names, groups): the key says which.
  std::string objects_key =
      ObjectCacheKey((hlo_fusion ? "fusion=hlo\n" : "fusion=planner\n") + text);
  if (expected_key != nullptr && *expected_key != objects_key)
    return absl::FailedPreconditionError(
        absl::StrCat("cpu-llvm: the serialized executable does not fit: ",
                     KeyMismatch(*expected_key, objects_key)));
  request.objects = objects;
  std::vector<std::string> compiled_objects;
  request.objects_out = &compiled_objects;
  if (object_cache_.has_value() && !plan.kernels.empty()) {
    request.cache = &*object_cache_;
    request.cache_key = objects_key;
  }
  // Flat loops whose runs are a fixed program get it compiled into one function with their
  // kernels (a loop driver); KILN_CPU_LOOP_DRIVERS=0 interprets it instead.
  auto flat_loops = MakeFlatLoops(plan);
  std::vector<LoopDriverSpec> drivers;
  std::vector<FlatLoop*> driven;
  KernelContext serial_check;
  serial_check.pool = pool_.get();
  serial_check.parallel_min_work = options_.plan.parallel_min_work;
  // A loop nested in a flat loop runs inside that loop's runs (and driver), not on its own.
  absl::flat_hash_set<const HloInstruction*> nested;
  for (auto& [instr, loop] : flat_loops)
    for (const HloInstruction* w : loop->NestedLoops()) nested.insert(w);
  if (!EnvOff("KILN_CPU_LOOP_DRIVERS"))
    for (auto& [instr, loop] : flat_loops)
      if (loop->schedule() != nullptr && !nested.contains(instr) &&
          loop->RunsSerially(serial_check)) {
        drivers.push_back({absl::StrCat("kiln_loop_driver_", drivers.size()), loop->schedule()});
        driven.push_back(loop.get());
      }
  std::vector<LoopDriverFn> driver_fns;
  request.drivers = &drivers;
  request.drivers_out = &driver_fns;
  absl::StatusOr<std::vector<KernelFn>> fns = jit_->Compile(plan.kernels, request);
#ifdef __GLIBC__
  // LLVM's freed heap goes back to the system before the program's buffers are allocated:
  // otherwise a run's peak memory is the compile's heap plus its own (3 MB of the MLP step's
  // 40 MB).
  malloc_trim(0);
#endif
  if (!fns.ok()) return fns.status();
  for (size_t i = 0; i < driven.size() && i < driver_fns.size(); ++i)
    driven[i]->set_driver(driver_fns[i]);
  FlatLoops flat_by_instr;
  for (auto& [instr, loop] : flat_loops) flat_by_instr[instr] = std::move(loop);
  // Temporaries from the buffer assignment, unless KILN_CPU_ARENA=0 (for comparisons).
  ArenaLayout arena;
  if (const char* env = std::getenv("KILN_CPU_ARENA");
      env == nullptr || std::string_view(env) != "0") {
    std::string report;
    arena = LayOutArena(*planned, plan, dump.dir.empty() ? nullptr : &report);
    if (!dump.dir.empty()) {
      absl::Status s =
          DumpReport(*planned, dump.dir, "cpu-llvm.buffer-assignment", dump.sequence, report);
      if (!s.ok()) return s;
    }
  }
  auto exe = std::make_shared<CpuExecutable>(
      std::move(planned), std::move(plan), std::move(*fns), jit_, std::move(ir), pool_,
      options_.plan.parallel_min_work, std::move(arena), std::move(flat_by_instr));
  exe->objects_ = std::move(compiled_objects);
  exe->objects_key_ = std::move(objects_key);
  cache_[key].emplace_back(std::move(text), exe);
  return std::shared_ptr<const CpuExecutable>(std::move(exe));
}

}  // namespace kiln::cpu
