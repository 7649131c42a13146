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
#include <functional>

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

// A dot or convolution of f16, bf16 or minifloat operands with at least `min_mnk`
// multiply-adds becomes an f32 one of converted operands (exact), followed by one conversion
// of the result: the arithmetic the evaluator and XLA define (f32 accumulation, one
// rounding), on the f32 GEMM or convolution library. `keep` (optional) names dots and
// convolutions to leave alone: ones a library takes in their own types (a bf16 GEMM).
class NarrowDotUpcast : public HloPass {
 public:
  explicit NarrowDotUpcast(int64_t min_mnk = 0,
                           std::function<bool(const HloInstruction&)> keep = nullptr)
      : min_mnk_(min_mnk), keep_(std::move(keep)) {}
  std::string_view name() const override { return "narrow-dot-upcast"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t min_mnk_;
  std::function<bool(const HloInstruction&)> keep_;
};

// An integer dot whose operand types differ from its result type (u8 x u8 -> s32, s16 x s16
// -> s32, s8 x s8 -> s32), or whose result is narrower than 32 bits, with at least `min_mnk`
// multiply-adds, becomes a dot of operands converted to the 32-bit integer type (64-bit for a
// 64-bit result) followed by a truncating conversion of the result: exact, since products
// and sums wrap modulo 2^n the same in either width, and it reaches an integer GEMM that
// takes one type throughout. `keep` (optional) names dots to leave alone: ones a library
// takes in their own types (an s8 GEMM).
class IntegerDotWidening : public HloPass {
 public:
  explicit IntegerDotWidening(int64_t min_mnk = 0,
                              std::function<bool(const HloInstruction&)> keep = nullptr)
      : min_mnk_(min_mnk), keep_(std::move(keep)) {}
  std::string_view name() const override { return "integer-dot-widening"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t min_mnk_;
  std::function<bool(const HloInstruction&)> keep_;
};

// A c64 (c128) dot with at least `min_mnk` multiply-adds becomes four f32 (f64) dots of the
// operands' real and imaginary parts, re = ar.br - ai.bi and im = ar.bi + ai.br, joined by
// `complex`: a backend with a real GEMM runs complex products there instead of in a loop of
// complex arithmetic. Rounding differs from a complex accumulation only in order. Dots that
// contract fewer than `min_contraction` elements stay complex: a backend that emits such
// multiply-adds in a loop (a quantum gate's 2x2 matrix on a state vector) reads the operand
// once there, where four real products read each part twice.
class ComplexDotExpander : public HloPass {
 public:
  explicit ComplexDotExpander(int64_t min_mnk = 0, int64_t min_contraction = 0)
      : min_mnk_(min_mnk), min_contraction_(min_contraction) {}
  std::string_view name() const override { return "complex-dot-expander"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t min_mnk_, min_contraction_;
};

}  // namespace kiln
