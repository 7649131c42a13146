// Rewrites a reduce-window that is a running reduction (what jnp.cumsum, cumprod, cummax
// and cummin lower to: a window the whole length of one dimension, padded by that length
// minus one on one side) into log2(n) steps of shifted combination: step k combines each
// element with the one 2^k places before it (or after it, for the reverse scan), so an
// n-long scan costs n log n operations instead of n^2 / 2. The init value is combined
// once at the end, as the window would. Floating-point sums are then added in another
// order than the window's, as XLA does for long scans. Reducers of scalar elementwise ops
// only (an add, a max, jax.lax.cumlogsumexp's logaddexp), applied as the same ops on arrays;
// like XLA, this takes the reducer to be associative. A wide max or min window along one
// dimension (a sliding maximum) becomes log2(size) doubling steps and one combination of
// two overlapping runs, exactly.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

class ReduceWindowScan : public HloPass {
 public:
  // Windows shorter than `min_length` stay (a short window is cheap as it is).
  explicit ReduceWindowScan(int64_t min_length = 16) : min_length_(min_length) {}
  std::string_view name() const override { return "reduce-window-scan"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t min_length_;
};

}  // namespace kiln
