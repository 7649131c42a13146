// Variable initializers: the value a VariableV2 holds before its first update, from its
// attributes. Random ones are counter-based, so element i is a pure function of (seed, i)
// and a NumPy script can reproduce them exactly (see core/graph/README.md for the formula).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "hlo/literal.h"

namespace kiln::graph {

// Uniform in [0, 1) for element `i` of stream `seed`: 53 high bits of Mix(Mix(seed) + i).
double CounterUniform(uint64_t seed, uint64_t i);
// splitmix64's finalizer (add the golden-ratio increment, then xor-shift-multiply).
uint64_t Mix(uint64_t z);

// Checks a VariableV2's `init` and its parameters (the shape function calls it).
absl::Status CheckInitializer(const Node& var);
// The initial value of a VariableV2 node (dtype, fully known shape, `init` = zeros |
// constant (value) | uniform (scale, seed) | normal (stddev, seed) | truncated_normal).
absl::StatusOr<Literal> InitialValue(const Node& var);

}  // namespace kiln::graph
