// Constant folding: instructions whose operands are all constants become constants.
#pragma once

#include <cstdint>

#include "hlo/passes/pass.h"

namespace kiln {

// Evaluates, with the HLO evaluator, every instruction whose operands are all constants,
// and replaces it by the constant result. Skipped: results above `max_elements` elements
// (XLA keeps big values computed, not stored), broadcasts and iotas (cheap to compute,
// expensive to store), side-effecting and random ops, and whatever the evaluator cannot do
// (its error only means "leave it").
class HloConstantFolding : public HloPass {
 public:
  explicit HloConstantFolding(int64_t max_elements = 65536) : max_elements_(max_elements) {}
  std::string_view name() const override { return "constant-folding"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t max_elements_;
};

}  // namespace kiln
