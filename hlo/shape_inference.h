// Shape inference: the result shape every opcode must have, given its operands' shapes and
// its attributes. The verifier checks parsed shapes against it; builders use it.
#pragma once

#include "absl/status/statusor.h"
#include "hlo/instruction.h"

namespace kiln {

// Infers the result shape of `instr` from its operands, attributes and called
// computations. Layouts are not inferred (the result has the default layout).
absl::StatusOr<Shape> InferShape(const HloInstruction& instr);

}  // namespace kiln
