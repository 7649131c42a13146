// Splits an arg-max or arg-min reduce (the two-operand variadic reduce jnp.argmax and
// jnp.argmin lower to: values with their indices, a reducer keeping the larger or smaller
// value and, among equal values, the smaller index) into two ordinary reduces a kernel
// emitter handles: the maximum (or minimum, NaN-propagating) of the values, then the
// smallest index whose value is it (or is NaN, when the extreme is NaN). The reducer is
// recognized by what it computes, probed with the evaluator on values around ties, NaN and
// infinities, not by how it is written. Booleans too (jnp.select's argmax over its stacked
// conditions: the first true), their extreme an or (an and). Other variadic reduces are left
// alone.
#pragma once

#include "hlo/passes/pass.h"

namespace kiln {

class ArgReduceSplit : public HloPass {
 public:
  std::string_view name() const override { return "arg-reduce-split"; }
  absl::StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
