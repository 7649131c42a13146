// Deterministic pseudo-random arguments for `kiln run` without --input.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "hlo/literal.h"

namespace kiln {

// The same (shape, seed) gives the same literal on every machine: a splitmix64 stream with
// our own mapping to values (std:: distributions differ between standard libraries).
// Floats: uniform in [-1, 1); signed ints: [-4, 4); unsigned: [0, 8); pred: fair coin;
// complex: both parts like floats. Tuples are filled element by element.
Literal MakeRandomLiteral(const Shape& shape, uint64_t seed);

// The generated input number `index` of `kiln run` and `kiln graph run`: MakeRandomLiteral
// with a fixed seed per index, so runs are reproducible. One that does not fit in memory is
// ResourceExhausted naming `what` (e.g. "parameter 0 'x'") and the shape.
absl::StatusOr<Literal> GeneratedInput(const Shape& shape, int index, const std::string& what);

}  // namespace kiln
