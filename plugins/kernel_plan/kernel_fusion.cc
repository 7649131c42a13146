// The planner's fusion decision written into HLO fusions (see kernel_fusion.h).
#include "plugins/kernel_plan/kernel_fusion.h"

#include <initializer_list>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "hlo/passes/arg_reduce_split.h"
#include "hlo/passes/batch_group_conv_to_reduce.h"
#include "hlo/passes/conditional_to_select.h"
#include "hlo/passes/convolution_to_gemm.h"
#include "hlo/passes/cse.h"
#include "hlo/passes/dot_canonicalization.h"
#include "hlo/passes/dot_expanders.h"
#include "hlo/passes/fusion_util.h"
#include "hlo/passes/multi_output_fusion.h"
#include "hlo/passes/optimization_barrier_expander.h"
#include "hlo/passes/reduce_kept_dimension_first.h"
#include "hlo/passes/reduce_minor_first.h"
#include "hlo/passes/reduce_window_scan.h"
#include "hlo/passes/scatter_indexed_dimensions_first.h"
#include "hlo/passes/sort_complex_as_parts.h"
#include "hlo/passes/sort_to_top_k.h"
#include "hlo/passes/vector_matrix_dot_to_reduce.h"
#include "hlo/text/parser.h"
#include "plugins/kernel_plan/gemm_match.h"

namespace kiln::kernel_plan {

absl::StatusOr<bool> KernelFusion::Run(HloModule& module) {
  FusionNameTable names(module);
  bool changed = false;
  for (HloComputation* comp : FusibleComputations(module)) {
    // Decided on the computation as it is, then applied: a value inlined into several
    // kernels is cloned into each fusion and stays outside while something else reads it.
    std::vector<KernelGroup> groups = KernelGroups(*comp, options_);
    const absl::flat_hash_set<const HloInstruction*> control = InstructionsWithControlEdges(*comp);
    std::vector<HloInstruction*> fused_members;
    for (const KernelGroup& g : groups) {
      bool has_control = control.contains(g.root);
      for (const HloInstruction* m : g.inlined) has_control = has_control || control.contains(m);
      if (has_control) continue;  // fusions cannot carry control edges
      FusionSpec spec;
      spec.members = g.inlined;
      spec.members.push_back(g.root);
      spec.outputs = {g.root};
      const absl::flat_hash_set<const HloInstruction*> in_group(spec.members.begin(),
                                                                spec.members.end());
      for (HloInstruction* m : g.inlined) {
        for (const HloInstruction* u : m->users()) {
          if (!in_group.contains(u)) spec.survivors.insert(m);
        }
        if (comp->root() == m) spec.survivors.insert(m);
      }
      spec.name = names.Get("fusion");
      spec.computation_name = names.Get("fused_computation");
      BuiltFusion built = BuildFusion(comp, spec, names);
      built.fusion->mutable_attrs().fusion_kind =
          KindForFusedComputation(*built.fusion->fused_computation());
      g.root->ReplaceAllUsesWith(built.fusion);
      fused_members.insert(fused_members.end(), spec.members.begin(), spec.members.end());
      changed = true;
    }
    // Each member once: a value inlined into several kernels is listed by each of them.
    absl::flat_hash_set<HloInstruction*> seen;
    std::vector<HloInstruction*> unique;
    for (HloInstruction* m : fused_members) {
      if (seen.insert(m).second) unique.push_back(m);
    }
    RemoveDeadMembers(comp, unique);
  }
  return changed;
}

namespace {

// The rewrites MakeFusedPlan runs before fusion: opt-barriers removed (then CSE), and the
// expanders that turn what the evaluator would run into kernels or GEMMs.
absl::Status ExpandForPlanning(HloModule& module, const PlanOptions& options) {
  // Barriers go first (this backend does not trade memory for recomputation): a value
  // jax.checkpoint recomputes behind one is then the forward's own, computed once.
  absl::StatusOr<bool> unbarred = OptimizationBarrierExpander().Run(module);
  if (!unbarred.ok()) return unbarred.status();
  if (*unbarred) {
    absl::StatusOr<bool> merged = HloCSE().Run(module);
    if (!merged.ok()) return merged.status();
  }
  ScaledDotExpander scaled_dot_expander;
  RaggedDotExpander ragged_dot_expander;
  ArgReduceSplit arg_reduce_split;
  // Running reductions the backend's library takes stay reduce-windows.
  ReduceWindowScan reduce_window_scan(16, options.library_call);
  ConditionalToSelect conditional_to_select;
  BatchGroupConvToReduce batch_group_conv_to_reduce;
  // Whole, a reduce the emitter takes as a column reduction reads its rows in order already.
  ReduceMinorFirst reduce_minor_first([](const HloInstruction& r) {
    return llvm_emit::IsColumnReduction(r) || llvm_emit::IsPartitionedColumnReduction(r);
  });
  // One too large for a column accumulator reduces through a transpose that the threads split.
  ReduceKeptDimensionFirst reduce_kept_dimension_first(llvm_emit::IsPartitionedColumnReduction,
                                                       llvm_emit::IsColumnReduction);
  if (options.native_sort) {
    // Complex keys (jnp.sort_complex) as float parts the generated comparator takes.
    absl::StatusOr<bool> parts = SortComplexAsParts().Run(module);
    if (!parts.ok()) return parts.status();
  }
  if (options.library_call != nullptr) {
    // A sort sliced to its first k (approx_max_k's lowering) as the topk the library runs.
    absl::StatusOr<bool> top_k = SortToTopK(options.library_call).Run(module);
    if (!top_k.ok()) return top_k.status();
  }
  if (options.native_scatter != nullptr) {
    // x.at[:, idx].add(v) through transposes, as the row scatter the backend runs natively.
    absl::StatusOr<bool> leading =
        ScatterIndexedDimensionsFirst(options.native_scatter).Run(module);
    if (!leading.ok()) return leading.status();
  }
  // scaled-dot and the common ragged-dot become ordinary dots (and so GEMM calls); arg-max
  // and arg-min reduces become two reduces the emitter does (not the host evaluator);
  // running reductions (cumsum) become log-step scans instead of n^2 / 2 window sums; a
  // conditional of a few scalar operations becomes a select (a loop holding it stays flat);
  // a depthwise filter gradient becomes vectorized reduces instead of a scalar window loop; a
  // reduce over minor and outer dimensions reduces the contiguous minor run first, and one over
  // dimension 0 with too many columns for one accumulator leads with a kept dimension.
  for (HloPass* expander : std::initializer_list<HloPass*>{
           &scaled_dot_expander, &ragged_dot_expander, &arg_reduce_split, &reduce_window_scan,
           &conditional_to_select, &batch_group_conv_to_reduce, &reduce_minor_first,
           &reduce_kept_dimension_first}) {
    absl::StatusOr<bool> expanded = expander->Run(module);
    if (!expanded.ok()) return expanded.status();
  }
  return absl::OkStatus();
}

}  // namespace

// The largest patch matrix an integer convolution is rewritten through (ConvolutionToGemm).
constexpr int64_t kMaxIntegerPatchBytes = int64_t{1} << 28;

absl::StatusOr<Plan> MakeFusedPlan(const HloModule& module, const PlanOptions& options,
                                   std::string_view module_text) {
  if (!options.fuse_unfused) return MakePlan(module, options);
  absl::StatusOr<std::unique_ptr<HloModule>> copy =
      module_text.empty() ? ParseHloModule(module.ToString(), module.name())
                          : ParseHloModule(module_text, module.name());
  if (!copy.ok()) return copy.status();
  if (absl::Status s = ExpandForPlanning(**copy, options); !s.ok()) return s;
  // Dots a GEMM library can take once an operand is transposed get that transpose first, so
  // fusion sees them as library calls with materialized operands.
  const int64_t gemm_min_mnk = options.device_gemm_min_mnk > 0 ? options.device_gemm_min_mnk
                               : HaveBlas()                    ? options.blas_min_mnk
                                                               : -1;
  if (options.device_gemm_min_mnk <= 0) {
    // Host kernels: a vector times a matrix below the GEMM library's size, contracting the
    // matrix's rows, is a column reduction (rows in order, results side by side).
    const int64_t emitted_below =
        gemm_min_mnk >= 0 ? gemm_min_mnk : std::numeric_limits<int64_t>::max();
    absl::StatusOr<bool> columns = VectorMatrixDotToReduce(emitted_below).Run(**copy);
    if (!columns.ok()) return columns.status();
  }
  if (gemm_min_mnk >= 0) {
    // Dots of 16- and 8-bit floats run on the f32 GEMM: converted operands, one rounding;
    // bf16 x bf16 ones stay as they are where the library has a bf16 GEMM (the dot
    // canonicalization below lays out their operands as it does an f32 dot's).
    auto library_bf16 = [&](const HloInstruction& dot) {
      const PrimitiveType t = dot.shape().element_type();
      return options.bf16_gemm && dot.opcode() == HloOpcode::kDot &&
             dot.operand(0)->shape().element_type() == PrimitiveType::BF16 &&
             dot.operand(1)->shape().element_type() == PrimitiveType::BF16 &&
             (t == PrimitiveType::F32 || t == PrimitiveType::BF16);
    };
    absl::StatusOr<bool> upcast = NarrowDotUpcast(gemm_min_mnk, library_bf16).Run(**copy);
    if (!upcast.ok()) return upcast.status();
    if (options.integer_gemm) {
      // Integer convolutions (a quantized CNN's s8 x s8 -> s32) as im2col and a dot for the
      // integer GEMM below: the emitted convolution loop ran 12x XLA:CPU's time. Float ones
      // stay convolutions (the convolution library takes them).
      absl::StatusOr<bool> convs =
          ConvolutionToGemm(gemm_min_mnk, kMaxIntegerPatchBytes, /*integer=*/true).Run(**copy);
      if (!convs.ok()) return convs.status();
      // Mixed and narrow integer dots run on the integer GEMM in 32 or 64 bits, except the
      // s8 x s8 -> s32 ones the host library's int8 GEMM takes as they are.
      auto library_s8 = [&](const HloInstruction& dot) {
        return options.s8_gemm &&
               MatchBlasDot(dot, gemm_min_mnk, GemmTypes{true, false}).has_value();
      };
      absl::StatusOr<bool> widened = IntegerDotWidening(gemm_min_mnk, library_s8).Run(**copy);
      if (!widened.ok()) return widened.status();
    }
    if (options.complex_kernels) {
      // Complex dots become real GEMMs of the parts (the parts and the join are kernels);
      // those the kernels emit as multiply-adds stay complex.
      absl::StatusOr<bool> split =
          ComplexDotExpander(gemm_min_mnk, kMaxEmittedContraction + 1).Run(**copy);
      if (!split.ok()) return split.status();
    }
    absl::StatusOr<bool> sorted = DotCanonicalization(gemm_min_mnk).Run(**copy);
    if (!sorted.ok()) return sorted.status();
  }
  absl::StatusOr<bool> fused = KernelFusion(options).Run(**copy);
  if (!fused.ok()) return fused.status();
  if (options.merge_sibling_kernels) {
    MultiOutputFusionOptions siblings;
    siblings.elementwise_loops_only = true;
    siblings.row_reductions = true;
    siblings.producer_consumer = options.merge_producer_kernels;
    absl::StatusOr<bool> merged = MultiOutputFusion(siblings).Run(**copy);
    if (!merged.ok()) return merged.status();
    // A cone both siblings had inlined is now in one fused computation twice.
    if (*merged) {
      absl::StatusOr<bool> deduplicated = HloCSE().Run(**copy);
      if (!deduplicated.ok()) return deduplicated.status();
    }
  }
  std::shared_ptr<const HloModule> owned = std::move(*copy);
  PlanOptions consume = options;
  consume.fuse_unfused = false;
  Plan plan = MakePlan(*owned, consume);
  plan.fused_module = std::move(owned);
  return plan;
}

}  // namespace kiln::kernel_plan
