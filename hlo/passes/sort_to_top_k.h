// A sort whose every result is sliced to its first k elements along the sorted (last)
// dimension becomes topk, as XLA's TopkRewriter does: JAX lowers jax.lax.approx_max_k on CPU
// to a full sort of the row and a slice (128 rows of 8192, k = 64: a 43 ms sort where XLA:CPU
// takes 3.3). Taken: one keys operand, optionally with an s32 iota along that dimension (the
// indices), a comparator that is compare(p0, p1) GT (the largest first) or LT (the smallest),
// and an unstable sort (equal keys in any order; a stable one's order of equal keys, +0 and
// -0 among them, is not topk's) unless the keys are integers, where both keep the lower index
// first. k at most half the dimension. `take` (optional) says whether the backend runs the
// topk it would make; refused, the sort stays.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

class SortToTopK : public HloPass {
 public:
  explicit SortToTopK(bool (*take)(const HloInstruction& topk) = nullptr) : take_(take) {}
  std::string_view name() const override { return "sort-to-top-k"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  bool (*take_)(const HloInstruction& topk);
};

}  // namespace kiln
