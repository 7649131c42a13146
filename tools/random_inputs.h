// Deterministic pseudo-random arguments for `kiln run` without --input.
#pragma once

#include <cstdint>

#include "hlo/literal.h"

namespace kiln {

// The same (shape, seed) gives the same literal on every machine: a splitmix64 stream with
// our own mapping to values (std:: distributions differ between standard libraries).
// Floats: uniform in [-1, 1); signed ints: [-4, 4); unsigned: [0, 8); pred: fair coin;
// complex: both parts like floats. Tuples are filled element by element.
Literal MakeRandomLiteral(const Shape& shape, uint64_t seed);

}  // namespace kiln
