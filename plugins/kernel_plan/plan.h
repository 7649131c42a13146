// How a codegen plugin (cpu-llvm, gpu-nvptx) runs an entry computation: which instructions
// become generated kernels
// (and which of them are generated inside another kernel), which fall back to the HLO
// evaluator, which are bookkeeping (parameters, constants, tuples), and which are control
// flow (while/conditional/call) whose computations are planned the same way. LLVM-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/module.h"
#include "plugins/kernel_plan/gemm_match.h"
#include "plugins/llvm_emitter/elemental_emitter.h"

namespace kiln::kernel_plan {

enum class Disposition {
  kKernel,       // computed by its own JIT kernel (its result is materialized)
  kInlined,      // generated element by element inside the kernel of a user
  kLibrary,      // a library call computes it (a large dot or convolution: GEMM; LAPACK)
  kControlFlow,  // while/conditional/call: the runner drives the sub-plans of its computations
  kEvaluator,    // the HLO evaluator computes it (the emitter cannot)
  kBookkeeping,  // parameter, constant, tuple, get-tuple-element: no computation
};
std::string_view DispositionName(Disposition d);

// A backend's reading of an instruction it computes by a routine of its own
// (PlanOptions::library_call_args); its runner knows the concrete type.
struct LibraryCallArgs {
  virtual ~LibraryCallArgs() = default;
};

struct PlanOptions {
  // Generate chains of unfused elementwise/data-movement instructions inside the kernel of
  // their consumer instead of one kernel (and one intermediate array) per instruction.
  bool fuse_unfused = true;
  // With fuse_unfused: a reduce whose users only spread it along leading dimensions (row
  // statistics: softmax's max and sum, layernorm's mean and variance) is generated inside its
  // consumers' kernels, once per row before the row's inner loop, instead of as a kernel of
  // its own (one pass over the data instead of one per statistic).
  bool inline_row_reductions = true;
  // When set, only the reduces it accepts are inlined that way (the GPU generates a row
  // statistic cooperatively only for long reductions over the trailing dimensions).
  bool (*row_reduction_filter)(const HloInstruction& reduce) = nullptr;
  // Unfused f32/f64 dots with batch*m*n*k at least this go to BLAS (when the build has it
  // and the operands are plain or transposed row-major matrices); smaller ones are emitted.
  // Dots inside fusions are always emitted. (Measured with bench_dot_cpu_llvm, 1 thread:
  // 16^3 ties with the emitted loop, 32^3 is 1.5x faster through BLAS, 64^3 19x.)
  int64_t blas_min_mnk = int64_t{1} << 14;
  // s8 x s8 -> s32 dots of those forms go to the host library too (cpu-llvm sets it when its
  // library has an exact int8 GEMM on this CPU).
  bool s8_gemm = false;
  // s32/u32 and s64/u64 dots of those forms go to the runner's integer GEMM (cpu-llvm's).
  bool integer_gemm = false;
  // bf16 x bf16 -> f32 or bf16 dots of those forms go to the host library's bf16 GEMM instead
  // of an f32 one of upcast operands (cpu-llvm sets it where oneDNN has native bf16 kernels).
  bool bf16_gemm = false;
  // Large convolutions (blas_min_mnk on the GEMM's work) go to the library's im2col + GEMM;
  // false emits every convolution (an ahead-of-time artifact that calls only a BLAS).
  bool library_convolutions = true;
  // Instructions the runner computes by a library routine of its own (cpu-llvm: LAPACK's
  // factorizations and triangular solves), planned as kLibrary steps with neither `gemm` nor
  // `conv`; null leaves them to the evaluator.
  bool (*library_call)(const HloInstruction& h) = nullptr;
  // What the backend makes of such an instruction once, at planning (its routine and flags),
  // kept as its step's library_args so a call inside a loop does not read them again; null
  // when it needs nothing.
  std::shared_ptr<const LibraryCallArgs> (*library_call_args)(const HloInstruction& h) = nullptr;
  // Scatters the runner computes natively (cpu-llvm: whole rows, scatter_rows.h); one that
  // indexes trailing dimensions is rewritten to lead with them where this takes the result.
  // Null leaves scatters as they are.
  bool (*native_scatter)(const HloInstruction& h) = nullptr;
  // When > 0: unfused f32 dots of the same forms with batch*m*n*k at least this go to a
  // device GEMM library step (gpu-nvptx's cuBLAS) whether or not the host has a BLAS.
  int64_t device_gemm_min_mnk = 0;
  // Kernels whose estimated work (element operations) is at least this run their outer loop
  // across the thread pool.
  int64_t parallel_min_work = int64_t{1} << 18;
  // Plan the computations of while/conditional/call as sub-plans (kControlFlow) instead of
  // handing the whole instruction to the evaluator (both the CPU and the GPU runners drive them).
  bool native_control_flow = true;
  // A kernel computing one reduce to a scalar with at least parallel_min_work is split into
  // this many parts (slices of the input's dimension 0) reduced in parallel, then combined
  // (KernelSpec::reduce_parts). A fixed count, so results do not depend on the thread count.
  int64_t reduce_parts = 16;
  // A kernel whose one output is a dynamic-update-slice of an input that nothing else in the
  // kernel reads writes only the update (KernelSpec::update_in_place, Step::in_place_source):
  // the runner hands it the operand's buffer, or a copy. The CPU runner supports it.
  bool update_in_place = false;
  // A kernel with small outputs that reads a large column reduction (llvm_emit::
  // IsColumnReduction) accumulates it row by row (KernelSpec::accumulate_columns), on one
  // thread. The CPU emitter supports it.
  bool accumulate_columns = false;
  // MakeFusedPlan only: after kernel-fusion, sibling kernels that are plain elementwise loops
  // over the same shape and read a common operand become one kernel with several outputs
  // (multi-output-fusion, elementwise loops only): the operand is read once and a cone both
  // had duplicated is computed once (JAX's threefry rounds: two halves of one state); so do
  // row reductions over the same rows (a row's sum and sum of squares: one pass over the
  // rows). The CPU runner turns it on (KILN_CPU_SIBLING_FUSION=0 turns it off there).
  bool merge_sibling_kernels = false;
  // With merge_sibling_kernels: then producer-consumer merging (producer_consumer_merge.h),
  // an elementwise loop computed into memory for several readers computed inside one of
  // them. The CPU runner turns it on (KILN_CPU_PRODUCER_FUSION=0 turns it off there).
  bool merge_producer_kernels = false;
  // Sorts whose comparator the emitter generates (llvm_emit::CanEmitSortComparator) are
  // kLibrary steps with a comparator kernel (Step::comparator) that the runner sorts with;
  // otherwise sorts go to the evaluator. The CPU runner supports it.
  bool native_sort = false;
  // c64/c128 elementwise arithmetic and data movement in kernels (llvm_emit::CanEmitComplex);
  // otherwise instructions on complex values go to the evaluator. The CPU runner supports it.
  bool complex_kernels = false;
};

// One step of the run, in post-order.
struct Step {
  const HloInstruction* instr = nullptr;
  Disposition kind = Disposition::kBookkeeping;
  int kernel = -1;  // index into Plan::kernels for kKernel
  // For kKernel: entry instructions whose values feed the kernel's input buffers, in order.
  std::vector<const HloInstruction*> sources;
  std::string why;                // for kEvaluator: why the emitter cannot do it
  std::optional<GemmShape> gemm;  // for kLibrary: a dot
  std::optional<ConvGemm> conv;   // for kLibrary: a convolution (im2col + GEMM)
  int comparator = -1;            // for kLibrary: a sort; its comparator's Plan::kernels index
  std::shared_ptr<const LibraryCallArgs> library_args;  // for kLibrary: library_call_args'
  // For kKernel: the size of the partitioned outer dimension (KernelSpec::partition_outer),
  // else 0; and the estimated work in element operations.
  int64_t outer_extent = 0;
  int64_t work = 0;
  // For kControlFlow: indexes into Plan::called of the computations it runs (while:
  // condition then body; conditional: the branches in order; call: the callee).
  std::vector<int> called;
  // For kKernel: KernelSpec::reduce_parts (a two-stage reduction to a scalar), else 0.
  int64_t reduce_parts = 0;
  // For a kKernel with KernelSpec::update_in_place: the index in `sources` of the operand
  // whose buffer the kernel updates (that source appears once in `sources`); else -1.
  int in_place_source = -1;
  // For a kKernel with one array output: indexes in `sources` of the values the kernel reads
  // only at the output's own index (through elementwise instructions of the output's shape
  // and type, nothing else), each appearing once in `sources`. The output may be written over
  // such a source's buffer when this step is its last reader and the run its only owner (a
  // donated argument, as input_output_alias intends; a temporary outside the arena).
  std::vector<int> output_over_sources;
  // Values no later step of the computation reads (the root excepted): a runner may free
  // them once this step has run, and a step that is the last reader of its in-place
  // operand may take that operand's buffer.
  std::vector<const HloInstruction*> last_uses;
  // For a kBookkeeping get-tuple-element: it is the only reader of its element, and only
  // get-tuple-elements read the tuple (not the root). A runner may move the element out of
  // the tuple instead of sharing it, so a later in-place kernel finds the element's buffer
  // with no other owner: a loop body's tuple parameter otherwise holds every state element
  // until its last get-tuple-element has run, and an update placed before that copied its
  // whole state each iteration (a scan stacking several outputs).
  bool moves_element = false;
  bool IsLastUse(const HloInstruction* h) const {
    return std::find(last_uses.begin(), last_uses.end(), h) != last_uses.end();
  }
};

// The steps of one computation.
struct ComputationPlan {
  const HloComputation* computation = nullptr;
  std::vector<Step> steps;
  // Disposition of every instruction, in post-order (the capability report).
  std::vector<std::pair<const HloInstruction*, Disposition>> dispositions;
};

// The entry's steps, plus one sub-plan per computation run by a kControlFlow step (a
// computation called from several places is planned once). Kernels of all of them are in
// one list, so they compile together.
struct Plan : ComputationPlan {
  std::vector<llvm_emit::KernelSpec> kernels;
  std::vector<ComputationPlan> called;
  // The module the plan's instructions belong to when planning made it (MakeFusedPlan:
  // the module after kernel-fusion); copies of the plan keep it alive. Null otherwise.
  std::shared_ptr<const HloModule> fused_module;
};

// True when the emitter generates `h` for a plan with `options` (CanEmitElementally, and
// complex values only with complex_kernels). `why` (optional) says what blocks it.
bool Emittable(const HloInstruction& h, const PlanOptions& options, std::string* why);

// True when every instruction of a fused computation can be emitted (a root tuple of
// arrays is allowed: a multi-output fusion). `why` says what blocks it.
bool CanEmitFusion(const HloInstruction& fusion, const PlanOptions& options, std::string* why);

Plan MakePlan(const HloModule& module, const PlanOptions& options);

// The planner's fusion decision for the unfused instructions of one computation: each
// instruction that gets a kernel of its own, with the instructions generated inside that
// kernel (its inlined cone, operands before users). Kernels of one instruction are left out.
// KernelFusion (kernel_fusion.h) writes these groups into the module as fusions.
struct KernelGroup {
  HloInstruction* root = nullptr;
  std::vector<HloInstruction*> inlined;
};
std::vector<KernelGroup> KernelGroups(const HloComputation& comp, const PlanOptions& options);

// Every computation's dispositions, one line per instruction (debugging, tests). `name`, when
// given, names a step in place of DispositionName (a runner saying how it runs one).
std::string PlanToString(
    const Plan& plan,
    const std::function<std::string(const HloInstruction&, Disposition)>& name = nullptr);

// Number of instructions, in the entry and every sub-plan, that run on the evaluator.
int EvaluatorStepCount(const Plan& plan);

// The branch a conditional takes for its selector: pred true -> 0, false -> 1; an s32 index
// out of [0, branches) -> the last branch, as XLA does.
int64_t ConditionalBranch(const Literal& selector, int64_t branches);
// The same for a selector's raw value: a bool when `pred`, else an int32.
int64_t ConditionalBranch(const void* selector, bool pred, int64_t branches);

// The value of a constant, or an error when the dump elided it (`constant({...})`).
absl::StatusOr<const Literal*> ConstantValue(const HloInstruction& constant);

}  // namespace kiln::kernel_plan
