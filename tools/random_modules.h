// Random HLO modules for `kiln plugin-test`: one small module per opcode family from a seed,
// as XLA text, made so that every conforming device computes the same values (no integer
// division by zero, no float -> unsigned of negatives, reductions only where the order of
// accumulation stays within the comparison's tolerances).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// The families, in the order plugin-test reports them: "unary", "binary", "compare-select",
// "broadcast", "reshape", "transpose", "reduce", "slice", "concatenate", "dot", "convert",
// "iota", "dynamic-slice", "pad", "reverse", "mixed".
const std::vector<std::string>& RandomModuleFamilies();

// A module of `family` from `seed` (the same text on every machine). `f32_only` keeps every
// value f32 (except indices and predicates the op needs): the probe modules of plugin-test.
std::string RandomModule(const std::string& family, uint64_t seed, bool f32_only = false);

}  // namespace kiln
