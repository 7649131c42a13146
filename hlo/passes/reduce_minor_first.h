// A reduce over a row-major operand's minor dimensions and some outer ones, with a kept
// dimension between them (f32[32,64,64,128] reduced over {0,3}), becomes two reduces: the
// minor run first, a row reduction over contiguous memory, then the outer dimensions of its
// much smaller result. Reduced whole, each result element gathers its run from every outer
// slice, far apart in memory (1.7 ms where the two reduces take 1.0). Only reducers whose
// order does not matter beyond rounding (add, multiply, maximum, minimum; and, or of pred)
// with their identity as the initial value (it is applied twice); no 16- or 8-bit float
// sums, whose intermediate would round. A reduce `keep_whole` accepts (one the caller's
// emitter runs well as it is) and runs shorter than `min_run` elements stay.
#pragma once

#include <cstdint>
#include <functional>

#include "hlo/passes/pass.h"

namespace kiln {

class ReduceMinorFirst : public HloPass {
 public:
  explicit ReduceMinorFirst(std::function<bool(const HloInstruction&)> keep_whole = nullptr,
                            int64_t min_run = 8)
      : keep_whole_(std::move(keep_whole)), min_run_(min_run) {}
  std::string_view name() const override { return "reduce-minor-first"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  std::function<bool(const HloInstruction&)> keep_whole_;
  int64_t min_run_;
};

}  // namespace kiln
