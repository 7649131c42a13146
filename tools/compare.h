// Comparing a result against a reference result with a per-dtype tolerance (--compare).
#pragma once

#include <string>

#include "hlo/literal.h"

namespace kiln {

// |actual - reference| <= atol * max(1, max|reference|) + rtol * |reference| elementwise;
// exact for pred and integers.
struct Tolerance {
  double atol = 0, rtol = 0;
};
Tolerance ToleranceFor(PrimitiveType type);

struct Comparison {
  bool ok = true;
  double max_abs = 0;  // max |actual - reference|
  double max_rel = 0;  // max |actual - reference| / |reference| over nonzero references
  int64_t mismatches = 0;
  std::string detail;  // the first mismatch, or why shapes differ
};

// NaN equals NaN (at the same place); infinities must match exactly.
Comparison CompareLiterals(const Literal& actual, const Literal& reference);

}  // namespace kiln
