// The standard pipelines (see optimization_pipeline.h).
#include "hlo/passes/optimization_pipeline.h"

#include "hlo/passes/algebraic_simplifier.h"
#include "hlo/passes/async_to_sync.h"
#include "hlo/passes/call_inliner.h"
#include "hlo/passes/constant_folding.h"
#include "hlo/passes/cse.h"
#include "hlo/passes/dce.h"
#include "hlo/passes/dot_merger.h"
#include "hlo/passes/library_call_lowering.h"
#include "hlo/passes/scatter_batching_to_indices.h"
#include "hlo/passes/scatter_to_update_slice.h"
#include "hlo/passes/transpose_folding.h"
#include "hlo/passes/tuple_simplifier.h"
#include "hlo/passes/while_loop_invariant_code_motion.h"

namespace kiln {

std::unique_ptr<HloPassPipeline> MakeSimplificationPipeline() {
  auto p = std::make_unique<HloPassPipeline>("simplification");
  // Async wrappers first: the passes below see through calls, not through async contexts.
  p->AddPass<AsyncToSync>();
  // JAX wraps helpers (dynamic_update_index_in_dim, closed_call, relu) in calls; flat, they
  // fuse with their neighbours and a loop's dynamic-update-slice updates its state in place.
  p->AddPass<CallInliner>();
  // cuBLAS/cuDNN calls of XLA's GPU dumps become dots and convolutions the passes see.
  p->AddPass<LibraryCallLowering>();
  // vmap's batched scatters in the one form backends take natively.
  p->AddPass<ScatterBatchingToIndices>();
  // x.at[i].set(v) in a loop: an update in place, not a copy of the state each step.
  p->AddPass<ScatterToUpdateSlice>();
  p->AddPass<AlgebraicSimplifier>();
  p->AddPass<HloConstantFolding>();
  p->AddPass<TupleSimplifier>();
  p->AddPass<TransposeFolding>();
  p->AddPass<HloCSE>();
  // Independent small dots sharing an operand (an unrolled RNN's x_t @ W): one GEMM call.
  // After CSE, which makes one of two equal dots.
  p->AddPass<DotMerger>();
  // A fori_loop body's work on what it closes over (x.T * lr), once before the loop.
  p->AddPass<WhileLoopInvariantCodeMotion>();
  p->AddPass<HloDCE>();
  // Each round only removes or shrinks instructions, so this converges quickly; the bound
  // guards against two rewrites undoing each other.
  p->set_fixed_point(16);
  return p;
}

}  // namespace kiln
