// Tuple simplification: taking apart a tuple that was just built, or rebuilding one whole.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

// get-tuple-element(tuple(a0, ..., an), i) -> ai;
// tuple(gte(x, 0), ..., gte(x, n-1)) with x of exactly n elements -> x.
class TupleSimplifier : public HloPass {
 public:
  std::string_view name() const override { return "tuple-simplifier"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
