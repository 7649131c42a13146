// The CPU codegen's front door: compiles an HLO module into a CpuExecutable (JIT kernels
// plus evaluator fallbacks, see plan.h) and keeps an in-memory cache keyed by the module's
// fingerprint, so compiling the same module again is a cache hit. LLVM-free.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "hlo/module.h"
#include "plugins/cpu_llvm/blas_dot.h"
#include "plugins/cpu_llvm/flat_loop.h"
#include "plugins/cpu_llvm/jit.h"
#include "plugins/cpu_llvm/library_calls.h"
#include "plugins/cpu_llvm/onednn_matmul.h"
#include "plugins/cpu_llvm/scatter_rows.h"
#include "plugins/cpu_llvm/step_profile.h"
#include "plugins/cpu_llvm/thread_pool.h"
#include "plugins/kernel_plan/arena_layout.h"
#include "plugins/kernel_plan/plan.h"

namespace kiln {
class HloEvaluator;
namespace kernel_plan {
struct Value;
class StepValues;
}  // namespace kernel_plan
}  // namespace kiln

namespace kiln::cpu {

// The plan, its steps and the GEMM shapes: the kernel_plan library cpu-llvm shares with
// gpu-nvptx.
using namespace ::kiln::kernel_plan;

// The planner's defaults, with what only the CPU runner supports turned on.
inline PlanOptions CpuPlanOptions() {
  PlanOptions p;
  p.update_in_place = true;
  p.accumulate_columns = true;
  p.merge_sibling_kernels = true;
  p.merge_producer_kernels = true;
  p.s8_gemm = HaveS8Gemm();
  p.bf16_gemm = HaveBf16Gemm();
  p.integer_gemm = true;
  p.native_sort = true;
  p.complex_kernels = true;
  p.library_call = IsLibraryCall;
  p.library_call_args = LibraryCallArgsOf;
  p.native_scatter = IsRowScatter;
  return p;
}

struct CompileOptions {
  PlanOptions plan = CpuPlanOptions();
  JitOptions jit;
  bool keep_ir = false;  // keep the optimized LLVM IR in the executable (tests, debugging)
  // Threads for kernels (and the BLAS library's own threads): 0 = DefaultThreadCount()
  // (KILN_CPU_THREADS, else the hardware's). The BLAS setting is process-wide: the last
  // compiler created sets it.
  int threads = 0;
  // Directory of the on-disk object cache: unset = KILN_CPU_CACHE_DIR (off when that is
  // unset or empty); an empty string turns it off.
  std::optional<std::string> cache_dir;
  // Fusion decided once, as HLO: the kernel-fusion pass (plugins/kernel_plan/kernel_fusion.h)
  // writes the plan's fusion into the module, and the planner consumes those fusions. False
  // (or KILN_CPU_FUSION=planner) leaves the deciding to the planner, as before the pass.
  bool fuse_as_hlo = true;
};

// Where a compiler's compile time went (sums over its compiles, milliseconds).
struct CompileStats {
  double plan_ms = 0;
  JitStats jit;
};

// The while loops that run flat (flat_loop.h), by instruction.
using FlatLoops = absl::flat_hash_map<const HloInstruction*, std::unique_ptr<FlatLoop>>;

class CpuExecutable {
 public:
  CpuExecutable(std::shared_ptr<const HloModule> module, Plan plan, std::vector<KernelFn> kernels,
                std::shared_ptr<CpuJit> jit, std::string ir, std::shared_ptr<ThreadPool> pool,
                int64_t parallel_min_work, ArenaLayout arena, FlatLoops flat_loops);

  // The kernels' object code and what it was compiled for, as bytes CpuCompiler::Load takes
  // back without compiling (kiln run --save-executable).
  std::string Serialize() const;

  // Runs the entry computation; `args` must match the entry parameters.
  absl::StatusOr<Literal> Run(std::span<const Literal> args) const;
  absl::StatusOr<Literal> Run(std::span<const Literal* const> args) const;
  // The same on literals it shares with the caller: one the caller gave up (a donated
  // argument, held by nothing else) may be updated in place or returned without a copy.
  absl::StatusOr<Literal> RunShared(std::vector<std::shared_ptr<const Literal>> args) const;

  const HloModule& module() const { return *module_; }
  const Plan& plan() const { return plan_; }
  int kernel_count() const { return static_cast<int>(kernels_.size()); }
  // Names of the entry instructions computed by JIT code (own kernel or inlined).
  std::vector<std::string> NativeInstructions() const;
  const std::string& llvm_ir() const { return ir_; }
  // True when the while loop `loop` runs flat (flat_loop.h).
  bool RunsFlat(const HloInstruction* loop) const { return flat_loops_.contains(loop); }
  // Whether it runs flat through a compiled loop driver (loop_schedule.h).
  bool RunsDriven(const HloInstruction* loop) const {
    auto it = flat_loops_.find(loop);
    return it != flat_loops_.end() && it->second->has_driver();
  }
  // Whether it runs flat as a counted loop (FlatLoop::counted).
  bool RunsCounted(const HloInstruction* loop) const {
    auto it = flat_loops_.find(loop);
    return it != flat_loops_.end() && it->second->counted();
  }
  // Where the entry's temporaries live (one arena per concurrent run, kept for the next).
  const ArenaLayout& arena_layout() const { return arena_; }

 private:
  std::shared_ptr<const HloModule> module_;
  Plan plan_;
  std::vector<KernelFn> kernels_;
  std::shared_ptr<CpuJit> jit_;  // owns the kernels' code
  std::string ir_;
  std::shared_ptr<ThreadPool> pool_;
  int64_t parallel_min_work_;
  std::unique_ptr<StepProfile> profile_;  // KILN_CPU_PROFILE; null when off
  ArenaLayout arena_;
  // KILN_CPU_FLAT_LOOPS=0 empties it.
  FlatLoops flat_loops_;
  // Evaluator steps that run as RunRowScatter instead (scatter_rows.h).
  absl::flat_hash_set<const HloInstruction*> row_scatters_;
  std::vector<std::string> objects_;  // the kernels' object code (Serialize)
  std::string objects_key_;           // what they were compiled for (CpuCompiler::ObjectsKey)
  friend class CpuCompiler;
  mutable std::mutex arena_mu_;
  mutable std::vector<std::shared_ptr<uint8_t>> free_arenas_;  // arenas of finished runs

  std::shared_ptr<uint8_t> AcquireArena() const;  // null when the layout is empty
  void ReturnArena(std::shared_ptr<uint8_t> arena) const;
  // The buffer of an array result (or, with `index`, of output `index` of a multi-output
  // kernel h): its place in `arena` when the layout has one (the entry's steps; `arena` is
  // null in sub-plans), else a fresh one.
  Literal ResultBuffer(const HloInstruction* h, const std::shared_ptr<uint8_t>& arena,
                       int64_t index = -1) const;
  // Runs one computation's steps (the entry, or a sub-plan of control flow) on `args`.
  // Values are released after their last reader (Step::last_uses).
  // Run and RunShared after their own argument conversion.
  absl::StatusOr<Literal> RunEntry(std::vector<Value> args) const;
  // `scratch`, when given, holds the values instead of a table made for this run: a loop
  // passes the same one to every iteration of its body, which keeps the table's memory.
  absl::StatusOr<Value> RunComputation(const ComputationPlan& p, std::vector<Value> args,
                                       HloEvaluator& evaluator,
                                       const std::shared_ptr<uint8_t>& arena,
                                       StepValues* scratch = nullptr) const;
  // A while/conditional/call step: runs its sub-plans (their temporaries in their regions of
  // `arena`) and sets its value.
  absl::Status RunControlFlow(const Step& step, StepValues& values, HloEvaluator& evaluator,
                              const std::shared_ptr<uint8_t>& arena) const;
  void RunKernel(const Step& step, StepValues& values, const std::shared_ptr<uint8_t>& arena) const;
  KernelContext KernelContextOf() const {
    return {&kernels_, pool_.get(), parallel_min_work_, profile_.get()};
  }
  // For a one-operand scatter on the evaluator: its operand's literal to scatter into, taken
  // when this step is its last reader, the run owns it alone and it is not in the arena (an
  // embedding gradient's zeroed table, updated where it is); nullopt otherwise.
  std::optional<Literal> TakeScatterOperand(const Step& step, StepValues& values,
                                            const std::shared_ptr<uint8_t>& arena) const;
};

// Where CpuCompiler::Compile dumps the module after its own passes (kernel-fusion): the
// program the plan runs.
struct DumpRequest {
  std::string dir;  // "" = none
  int sequence = 0;
};

class CpuCompiler {
 public:
  static absl::StatusOr<std::unique_ptr<CpuCompiler>> Create(const CompileOptions& options = {});

  absl::StatusOr<std::shared_ptr<const CpuExecutable>> Compile(
      std::shared_ptr<const HloModule> module, const DumpRequest& dump = DumpRequest());
  // An executable of `module` from CpuExecutable::Serialize's bytes: planned again (cheap),
  // its kernels loaded from the saved objects, nothing compiled. Bytes saved by another
  // build, for another CPU or other options, or from another module are refused
  // (FailedPrecondition, saying which); damaged ones are DataLoss.
  absl::StatusOr<std::shared_ptr<const CpuExecutable>> Load(std::shared_ptr<const HloModule> module,
                                                            std::string_view serialized);

  int64_t cache_hits() const { return hits_; }
  int64_t cache_misses() const { return misses_; }
  const CpuJit& jit() const { return *jit_; }
  CompileStats stats() const;
  // The on-disk object cache, or null when off.
  const DiskCache* object_cache() const { return object_cache_ ? &*object_cache_ : nullptr; }
  int threads() const { return pool_->size(); }

 private:
  CpuCompiler(const CompileOptions& options, std::shared_ptr<CpuJit> jit,
              std::shared_ptr<ThreadPool> pool)
      : options_(options), jit_(std::move(jit)), pool_(std::move(pool)) {}

  std::string ObjectCacheKey(const std::string& text) const;
  absl::StatusOr<std::shared_ptr<const CpuExecutable>> CompileOrLoad(
      std::shared_ptr<const HloModule> module, const DumpRequest& dump,
      const std::vector<std::string>* objects, const std::string* expected_key);

  CompileOptions options_;
  std::shared_ptr<CpuJit> jit_;
  std::shared_ptr<ThreadPool> pool_;
  std::optional<DiskCache> object_cache_;
  mutable std::mutex mu_;
  double plan_ms_ = 0;
  // Fingerprint -> executables with that fingerprint (the module text tells collisions apart).
  // Per structural key: the module text as given and its executable.
  absl::flat_hash_map<uint64_t,
                      std::vector<std::pair<std::string, std::shared_ptr<const CpuExecutable>>>>
      cache_;
  int64_t hits_ = 0, misses_ = 0;
};

// A structural hash of a module (opcodes, shapes, operand wiring, main attributes, constant
// bytes, called computations). Combined with HloModule::Fingerprint for the cache key, so
// the cache stays correct even where the printed text omits something.
uint64_t StructuralHash(const HloModule& module);

}  // namespace kiln::cpu
