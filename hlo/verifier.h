// The verifier: rejects ill-formed modules with a message naming the instruction.
#pragma once

#include "absl/status/status.h"
#include "hlo/module.h"

namespace kiln {

// Checks operand counts, shapes against InferShape, parameter numbering, called
// computation signatures, roots, and use-def consistency.
absl::Status VerifyModule(const HloModule& module);

}  // namespace kiln
