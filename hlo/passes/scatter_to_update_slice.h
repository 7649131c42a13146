// A scatter of one window at one index (what `x.at[i].set(v)` and `x.at[i].add(v)` lower to
// in JAX) as a dynamic-update-slice, which a loop updates in place instead of copying its
// whole state each step. The window is the operand's own slice combined with the update by
// the scatter's combiner (kept as written when it is a plain overwrite). Scatter skips a
// window that does not fit at its index, where dynamic-update-slice would clamp it: the
// rewrite writes back the operand's own slice then. Scatters of several windows, several
// operands or batching dimensions are left alone.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

class ScatterToUpdateSlice : public HloPass {
 public:
  std::string_view name() const override { return "scatter-to-update-slice"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
