// Algebraic simplification: local rewrites that remove work without changing results.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

// Exact rewrites only (bit-identical results, up to the sign of a zero where XLA accepts
// that too: x+0 -> x). The list:
//   x+0, 0+x, x-0, x*1, 1*x, x/1 -> x;   x*0 -> 0 for integers and pred only (floats:
//   NaN*0 and inf*0 are NaN);   negate(negate(x)) -> x;
//   transpose(transpose(x)) -> one transpose or x;  identity transpose -> x;
//   reshape(reshape(x)) -> reshape(x);  reshape to the same shape -> x;
//   broadcast(broadcast(x)) -> broadcast(x);  identity broadcast -> x;
//   reshape/transpose of a broadcast scalar -> broadcast of the scalar;
//   slice of the whole operand -> x;  slice(slice(x)) -> slice(x);
//   concatenate: empty operands dropped, one operand -> that operand;
//   pad with no padding -> x;
//   reduce over no dims or only size-1 dims, when init is the reducer's identity
//     (0 for add, 1 for multiply, -inf/min for max, ...) -> reshape(x);
//   dot whose contracting dims all have size 1 (an outer product, batch dims leading)
//     -> multiply(broadcast(lhs), broadcast(rhs));
//   select with a constant predicate -> that side;  select(p, x, x) -> x;
//   compare(x, x) on integers/pred -> constant (EQ/GE/LE true, NE/GT/LT false);
//   convert to the same type -> x;  copy that keeps the layout -> x.
class AlgebraicSimplifier : public HloPass {
 public:
  std::string_view name() const override { return "algsimp"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
