// The verifier: rejects ill-formed modules with a message naming the instruction.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hlo/module.h"
#include "hlo/shape_inference.h"

namespace kiln {

// Checks operand counts, shapes against InferShape, parameter numbering, called
// computation signatures, roots, and use-def consistency. kExecutable (the default) is what
// Kiln runs; kXlaText also accepts what XLA's verifier accepts in its tests' layout-free HLO and
// Kiln's devices do not run (see ShapeRules): `kiln print` and the conformance tools use it.
absl::Status VerifyModule(const HloModule& module, ShapeRules rules = ShapeRules::kExecutable);

// A module to run, from HLO text: parsed, verified (unless `verify` is false) and with an
// entry computation; errors start with `filename`. What the `kiln` tool and the Python
// package read.
absl::StatusOr<std::unique_ptr<HloModule>> ParseRunnableModule(
    std::string_view text, std::string_view filename, bool verify = true,
    ShapeRules rules = ShapeRules::kExecutable);

}  // namespace kiln
