// Transpose folding: a transpose feeding a dot or convolution becomes a relabeling of
// that op's dimension numbers, so no transposed copy is ever made.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

// dot(transpose(a), b): the transpose is folded when the dot's result keeps its dimension
// order, i.e. the operand's free (non-batch, non-contracting) dimensions stay in increasing
// order under the permutation. convolution(transpose(x), transpose(k)): always folded into
// the dimension labels (they name dimensions, the order does not matter).
class TransposeFolding : public HloPass {
 public:
  std::string_view name() const override { return "transpose-folding"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
