// The host side of `kiln run`: arguments for a module's entry parameters (from .npy files,
// or generated), and the short printed form of a result.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/computation.h"
#include "hlo/literal.h"

namespace kiln {

// "parameter 0 'x'"
std::string ParamLabel(const HloInstruction& p);
// Host arguments for the entry parameters: one per .npy file in `inputs`, or generated
// (deterministic pseudo-random) when `inputs` is empty.
// `adapt(i, array)`, when given, may replace input i after it is read (a whole array cut to
// a device's tile) before its shape is checked against the parameter.
absl::StatusOr<std::vector<Literal>> MakeArguments(
    const HloComputation& entry, const std::vector<std::string>& inputs,
    const std::function<absl::StatusOr<Literal>(int, Literal)>& adapt = nullptr);
// A short printable form: shape and up to 16 values.
std::string Summarize(const Literal& l);

}  // namespace kiln
