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

#include <functional>
#include <optional>

#include "hlo/passes/pass.h"

namespace kiln {

// A reduce-window that is a running reduction along `dim` of its operand (at least
// `min_length` long): the window spans the whole dimension, padded by its length minus one
// before it (forward) or after it (`reverse`), stride 1, no dilation.
struct RunningScan {
  int64_t dim;
  bool reverse;
};
std::optional<RunningScan> RunningScanOf(const HloInstruction& reduce_window, int64_t min_length);

class ReduceWindowScan : public HloPass {
 public:
  // Windows shorter than `min_length` stay (a short window is cheap as it is), and so do the
  // running reductions `keep` accepts (a backend's own scan routine takes them).
  explicit ReduceWindowScan(int64_t min_length = 16,
                            std::function<bool(const HloInstruction&)> keep = nullptr)
      : min_length_(min_length), keep_(std::move(keep)) {}
  std::string_view name() const override { return "reduce-window-scan"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t min_length_;
  std::function<bool(const HloInstruction&)> keep_;
};

}  // namespace kiln
