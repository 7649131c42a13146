// Comparing a result against a reference result element by element (--compare).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hlo/literal.h"

namespace kiln {

// An element passes when |actual - reference| <= atol + rtol * |reference| (numpy.allclose's
// rule, each element on its own); exact for pred and integers (atol = rtol = 0).
struct Tolerance {
  double atol = 0, rtol = 0;
};
Tolerance ToleranceFor(PrimitiveType type);

struct Comparison {
  bool ok = true;
  double max_abs = 0;  // max |actual - reference| over finite pairs
  double max_rel = 0;  // max |actual - reference| / |reference| over finite nonzero references
  int64_t mismatches = 0;
  // The worst element: the one furthest beyond its bound (or, when all pass, closest to it),
  // as a multi-dimensional index, e.g. "[2,7]".
  std::string worst_index;
  double worst_actual = 0, worst_reference = 0;
  std::string detail;  // why it failed: the worst element, or why shapes differ
};

// NaN must meet NaN and an infinity the same infinity, at the same place; every other pair
// is held to `tolerance` (ToleranceFor the reference's type when not given).
Comparison CompareLiterals(const Literal& actual, const Literal& reference,
                           std::optional<Tolerance> tolerance = std::nullopt);

// "[i,j,k]" for linear (row-major) element `linear` of `dims`.
std::string FormatIndex(const std::vector<int64_t>& dims, int64_t linear);

}  // namespace kiln
