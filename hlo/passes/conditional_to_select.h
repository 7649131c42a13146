// A conditional whose branches are a few cheap, pure operations on small values (what a
// `lax.cond` in a scalar scan's step lowers to) becomes both branches computed inline and a
// select of their results by the selector: a loop body holding it is then only kernels (a
// flat loop) instead of a branch the runner takes through its general path each step.
// Branches are inlined when every instruction is elementwise, a constant, a broadcast, a
// reshape or tuple plumbing, of at most kMaxElements elements, at most kMaxInstructions
// each. A pred selector picks branch 0 when true; an s32 index picks its branch, and one out
// of range the last, as XLA defines it.
#pragma once

#include <cstdint>

#include "hlo/passes/pass.h"

namespace kiln {

class ConditionalToSelect : public HloPass {
 public:
  static constexpr int64_t kMaxElements = 64;
  static constexpr int64_t kMaxInstructions = 32;
  std::string_view name() const override { return "conditional-to-select"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
