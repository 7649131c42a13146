// Overflow-checked int64 arithmetic for shape and size computations: attributes and
// dimensions come from untrusted HLO text, so sums and products of them may not fit.
#pragma once

#include <cstdint>
#include <optional>

namespace kiln {

// a + b, or nullopt when the sum does not fit in int64.
inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a - b, or nullopt when the difference does not fit in int64.
inline std::optional<int64_t> CheckedSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a * b, or nullopt when the product does not fit in int64.
inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Size of a dimension of `size` elements with `interior` elements inserted between
// neighbours and `low`/`high` elements added at the ends (removed where negative): pad's
// arithmetic, and a window's padded, dilated base (interior = lhs_dilate - 1). nullopt when a
// value that evaluators form from these overflows int64: the interior-padded size, it plus
// either edge, the total, or the negation of either edge (an output index minus `low` lies
// in [-low, size + high)). `size` and `interior` must be non-negative.
inline std::optional<int64_t> CheckedPaddedSize(int64_t size, int64_t interior, int64_t low,
                                                int64_t high) {
  if (low == INT64_MIN || high == INT64_MIN) return std::nullopt;
  std::optional<int64_t> core = CheckedMul(size > 0 ? size - 1 : 0, interior);
  if (core) core = CheckedAdd(*core, size);
  if (!core || !CheckedAdd(*core, low) || !CheckedAdd(*core, high)) return std::nullopt;
  std::optional<int64_t> total = CheckedAdd(*core, low);
  return CheckedAdd(*total, high);
}

}  // namespace kiln
