// The name -> pass factory table (see pass_registry.h).
#include "hlo/passes/pass_registry.h"

#include <functional>

#include "hlo/passes/algebraic_simplifier.h"
#include "hlo/passes/arg_reduce_split.h"
#include "hlo/passes/async_to_sync.h"
#include "hlo/passes/call_inliner.h"
#include "hlo/passes/constant_folding.h"
#include "hlo/passes/convolution_to_gemm.h"
#include "hlo/passes/cse.h"
#include "hlo/passes/dce.h"
#include "hlo/passes/dot_canonicalization.h"
#include "hlo/passes/dot_expanders.h"
#include "hlo/passes/dot_merger.h"
#include "hlo/passes/fusion_pipeline.h"
#include "hlo/passes/instruction_fusion.h"
#include "hlo/passes/library_call_lowering.h"
#include "hlo/passes/multi_output_fusion.h"
#include "hlo/passes/optimization_barrier_expander.h"
#include "hlo/passes/optimization_pipeline.h"
#include "hlo/passes/reduce_kept_dimension_first.h"
#include "hlo/passes/reduce_minor_first.h"
#include "hlo/passes/reduce_window_scan.h"
#include "hlo/passes/scatter_batching_to_indices.h"
#include "hlo/passes/scatter_indexed_dimensions_first.h"
#include "hlo/passes/scatter_to_update_slice.h"
#include "hlo/passes/sort_complex_as_parts.h"
#include "hlo/passes/sort_to_top_k.h"
#include "hlo/passes/spmd_partitioner.h"
#include "hlo/passes/transpose_folding.h"
#include "hlo/passes/tuple_simplifier.h"
#include "hlo/passes/vector_matrix_dot_to_reduce.h"
#include "hlo/passes/while_loop_invariant_code_motion.h"

namespace kiln {
namespace {

using PassFactory = std::function<std::unique_ptr<HloPass>()>;

template <typename P>
PassFactory Factory() {
  return [] { return std::unique_ptr<HloPass>(std::make_unique<P>()); };
}

// The one list to extend when a pass is added. The name is whatever the pass's name()
// says, so the two can never disagree.
const std::vector<PassFactory>& Factories() {
  static const std::vector<PassFactory>* factories = new std::vector<PassFactory>{
      Factory<HloDCE>(),
      Factory<HloCSE>(),
      Factory<HloConstantFolding>(),
      Factory<AlgebraicSimplifier>(),
      Factory<TransposeFolding>(),
      Factory<DotCanonicalization>(),
      Factory<DotMerger>(),
      Factory<ConvolutionToGemm>(),
      Factory<ArgReduceSplit>(),
      Factory<ReduceMinorFirst>(),
      Factory<ReduceKeptDimensionFirst>(),
      Factory<VectorMatrixDotToReduce>(),
      Factory<ReduceWindowScan>(),
      Factory<OptimizationBarrierExpander>(),
      Factory<ScaledDotExpander>(),
      Factory<RaggedDotExpander>(),
      Factory<NarrowDotUpcast>(),
      Factory<IntegerDotWidening>(),
      Factory<ComplexDotExpander>(),
      Factory<TupleSimplifier>(),
      Factory<WhileLoopInvariantCodeMotion>(),
      Factory<CallInliner>(),
      Factory<ScatterBatchingToIndices>(),
      Factory<ScatterIndexedDimensionsFirst>(),
      Factory<SortComplexAsParts>(),
      Factory<SortToTopK>(),
      Factory<ScatterToUpdateSlice>(),
      Factory<AsyncToSync>(),
      Factory<LibraryCallLowering>(),
      Factory<SpmdPartitioner>(),
      Factory<InstructionFusion>(),
      Factory<MultiOutputFusion>(),
      [] { return std::unique_ptr<HloPass>(MakeSimplificationPipeline()); },
      [] { return std::unique_ptr<HloPass>(MakeFusionPipeline()); },
  };
  return *factories;
}

}  // namespace

const std::vector<std::string>& RegisteredPassNames() {
  static const std::vector<std::string>* names = [] {
    auto* v = new std::vector<std::string>;
    for (const PassFactory& f : Factories()) v->emplace_back(f()->name());
    return v;
  }();
  return *names;
}

absl::StatusOr<std::unique_ptr<HloPass>> MakePassByName(std::string_view name) {
  const std::vector<std::string>& names = RegisteredPassNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return Factories()[i]();
  }
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  return absl::InvalidArgumentError("unknown pass '" + std::string(name) +
                                    "' (known passes: " + known + ")");
}

}  // namespace kiln
