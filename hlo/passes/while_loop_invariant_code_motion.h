// Loop-invariant code motion for while loops: work in a loop body that depends only on state
// the body passes through unchanged (and on constants) is computed once before the loop, and
// its value becomes one more element of the loop state, passed through too. JAX writes such
// work whenever a fori_loop body uses a value it closes over (x.T * lr in a gradient step:
// a transpose and multiply of the whole matrix every iteration). As XLA's pass of that name,
// broadcasts, reshapes and other ops that only move or replicate data are not hoisted by
// themselves (carrying their larger results costs more than recomputing them in the body's
// kernels); the expensive values under them are. Custom calls without effects move too (an LU
// of a matrix the loop does not change), the loop carrying the elements of a tuple result it
// reads; iotas, like constants, are invariant sources. Instructions with side effects, other
// tuples and control flow stay, as does everything in a loop whose body or condition another
// instruction also calls.
#pragma once

#include "absl/container/flat_hash_set.h"
#include "hlo/passes/pass.h"

namespace kiln {

// The values of while body `body` that do not change between iterations, which the pass
// computes before the loop: the state elements the body passes through (read from its
// parameter), constants and iotas, and what it may hoist computed from those alone. Empty
// when the body passes nothing through or is not of the form it hoists from (one tuple
// parameter, a tuple root).
absl::flat_hash_set<const HloInstruction*> LoopInvariants(const HloComputation& body);

class WhileLoopInvariantCodeMotion : public HloPass {
 public:
  std::string_view name() const override { return "while-loop-invariant-code-motion"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
