// The verifier: rejects ill-formed modules with a message naming the instruction.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hlo/module.h"

namespace kiln {

// Checks operand counts, shapes against InferShape, parameter numbering, called
// computation signatures, roots, and use-def consistency.
absl::Status VerifyModule(const HloModule& module);

// A module to run, from HLO text: parsed, verified (unless `verify` is false) and with an
// entry computation; errors start with `filename`. What the `kiln` tool and the Python
// package read.
absl::StatusOr<std::unique_ptr<HloModule>> ParseRunnableModule(std::string_view text,
                                                               std::string_view filename,
                                                               bool verify = true);

}  // namespace kiln
