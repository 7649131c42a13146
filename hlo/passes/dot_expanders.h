// Rewrites of the dot variants into ordinary HLO, so a backend without kernels for them
// compiles them as dots (and its GEMM path) instead of interpreting them:
// - scaled-dot: each operand converted to f32 (f64 for an f64 result) and multiplied by
//   its scales broadcast over their blocks, then a dot.
// - ragged-dot with a ragged free dimension and group_sizes of shape [g] (the
//   mixture-of-experts form): lhs broadcast over the groups and masked to each group's rows
//   (group ends from a product with a triangular matrix of ones), then one dot contracting
//   the group dimension as well, as JAX lowers ragged_dot for the CPU. A ragged batch
//   dimension is an ordinary dot. Other forms are left to the backend.
#pragma once

#include <cstdint>

#include "hlo/passes/pass.h"

namespace kiln {

class ScaledDotExpander : public HloPass {
 public:
  std::string_view name() const override { return "scaled-dot-expander"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

class RaggedDotExpander : public HloPass {
 public:
  std::string_view name() const override { return "ragged-dot-expander"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

// A dot of f16, bf16 or minifloat operands with at least `min_mnk` multiply-adds becomes an
// f32 dot of converted operands (exact), followed by one conversion of the result: the
// arithmetic the evaluator and XLA define (f32 accumulation, one rounding), on the f32 GEMM.
class NarrowDotUpcast : public HloPass {
 public:
  explicit NarrowDotUpcast(int64_t min_mnk = 0) : min_mnk_(min_mnk) {}
  std::string_view name() const override { return "narrow-dot-upcast"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t min_mnk_;
};

}  // namespace kiln
