// Dot merging: independent small dots that share an operand become one dot over the other
// operands concatenated, its result sliced back for each of them.
#pragma once

#include <cstdint>

#include "hlo/passes/pass.h"

namespace kiln {

// Dots d_i = dot(x_i, w) with the same w, dimension numbers and types, where each x_i has one
// free (non-batch, non-contracting) dimension and no d_i depends on another, become
// dot(concatenate(x_i), w) sliced along that dimension; likewise dot(x, w_i) with the rhs
// concatenated. An unrolled RNN's input projections x_t @ W, or the q, k and v projections of
// one x, then make one GEMM call instead of many that are each too short to split across
// threads. Only dots of at most `max_multiply_adds` each: a large dot gains nothing and
// would pay for copying its operand into the concatenation.
class DotMerger : public HloPass {
 public:
  explicit DotMerger(int64_t max_multiply_adds = int64_t{1} << 23)
      : max_multiply_adds_(max_multiply_adds) {}
  std::string_view name() const override { return "dot-merger"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t max_multiply_adds_;
};

}  // namespace kiln
