// An opt-barrier is its operand: the barrier only keeps optimizations from moving work across
// it (jax.checkpoint writes one around what the backward pass recomputes, so that the
// recomputation is not merged with the forward's value and the forward's activations can be
// freed). A backend that does not trade memory for recomputation removes the barriers, as
// XLA:CPU does, and common-subexpression elimination then computes each value once.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

class OptimizationBarrierExpander : public HloPass {
 public:
  std::string_view name() const override { return "optimization-barrier-expander"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
