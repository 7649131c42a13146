// A scatter with batching dimensions (what jax.vmap makes of x.at[i].set(v): each batch
// element updates its own slice of the operand) as one without: the index vectors gain one
// component per batching dimension, the update's position along it (an iota), and the
// operand's batching dimensions become inserted window dimensions indexed by those
// components. The same updates land in the same places; backends then need one scatter
// form, and cpu-llvm's native row scatter takes the result instead of the evaluator.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

class ScatterBatchingToIndices : public HloPass {
 public:
  std::string_view name() const override { return "scatter-batching-to-indices"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
