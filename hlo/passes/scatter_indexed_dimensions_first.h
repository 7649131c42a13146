// A scatter that indexes trailing dimensions of its operand and updates the others whole
// (x.at[:, idx].add(v): an overlap-add over the columns of a batch, f32[4,16256] indexed along
// dimension 1) runs as the same scatter on a transposed operand and updates that lead with the
// indexed dimensions, then transposed back: the row form a backend runs natively (cpu-llvm's
// row scatter, one band of rows per worker) instead of a general scatter on its evaluator
// (iSTFT b4: 2.9 -> 0.5 ms). The rewrite is kept only where `accepts` takes the new scatter.
#pragma once

#include <functional>

#include "hlo/passes/pass.h"

namespace kiln {

class ScatterIndexedDimensionsFirst : public HloPass {
 public:
  using Predicate = std::function<bool(const HloInstruction&)>;
  explicit ScatterIndexedDimensionsFirst(Predicate accepts = nullptr)
      : accepts_(std::move(accepts)) {}
  std::string_view name() const override { return "scatter-indexed-dimensions-first"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  Predicate accepts_;
};

}  // namespace kiln
