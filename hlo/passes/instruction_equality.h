// When two instructions (or two computations) compute the same thing: the test CSE uses.
#pragma once

#include "hlo/module.h"

namespace kiln {

// Same opcode, same shape (layout included), same attributes (metadata ignored: it only
// says where an op came from), equivalent called computations. Operands are not compared.
bool IdenticalIgnoringOperands(const HloInstruction& a, const HloInstruction& b);

// Structurally equal computations: same parameters, and instructions that pair up in post
// order with identical opcodes, shapes, attributes and operand positions (so two copies of
// an `add` reducer are equivalent).
bool ComputationsEquivalent(const HloComputation& a, const HloComputation& b);

}  // namespace kiln
