// Recognizes the small called computations that reductions, scatters, sorts and
// select-and-scatter use (a single add/max/compare of the parameters, or `ROOT =
// parameter(1)`), so those ops can run a native loop instead of calling the computation
// once per element; plus the scalar semantics of those recognized ops.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>

#include "hlo/attributes.h"
#include "hlo/computation.h"
#include "hlo/evaluator/kernel_util.h"
#include "hlo/native_type.h"
#include "hlo/total_order.h"

namespace kiln::eval {

enum class CombinerKind { kOther, kAdd, kMultiply, kMaximum, kMinimum, kAnd, kOr, kAssign };

// The kind of a two-parameter scalar computation whose root is one binary op of
// parameter(0) and parameter(1) (either order for the commutative ones), or kAssign for
// `ROOT = parameter(1)`. kOther for anything else.
CombinerKind ClassifyCombiner(const HloComputation& comp);

// A computation whose root is `compare(parameter(lhs), parameter(rhs))` on scalars.
struct SimpleCompare {
  int64_t lhs_param = 0, rhs_param = 1;
  ComparisonDirection direction = ComparisonDirection::kLt;
  bool total_order = false;
};
std::optional<SimpleCompare> ClassifyCompare(const HloComputation& comp);

// Whether the fast path for `kind` is defined on element type T (and/or only on integers
// and pred, max/min not on complex).
template <typename T>
constexpr bool CombinerSupports(CombinerKind kind) {
  if constexpr (IsComplexT<T>::value) {
    return kind == CombinerKind::kAdd || kind == CombinerKind::kMultiply ||
           kind == CombinerKind::kAssign;
  } else if constexpr (kIsFloatT<T>) {
    return kind != CombinerKind::kAnd && kind != CombinerKind::kOr && kind != CombinerKind::kOther;
  } else {
    return kind != CombinerKind::kOther;
  }
}

// Applies a recognized combiner to accumulation-type values (float max/min propagate NaN,
// as XLA's maximum/minimum do).
template <typename A>
inline A ApplyCombiner(CombinerKind kind, A a, A b) {
  switch (kind) {
    case CombinerKind::kAdd:
      return static_cast<A>(a + b);
    case CombinerKind::kMultiply:
      return static_cast<A>(a * b);
    case CombinerKind::kAssign:
      return b;
    default:
      break;
  }
  if constexpr (!IsComplexT<A>::value) {
    switch (kind) {
      // Floats as selects without branches (a NaN in a wins, then one in b), which the
      // vectorizer turns into compares and blends: with branches a segment max's rows of 16
      // floats were combined one element at a time.
      case CombinerKind::kMaximum:
        if constexpr (std::is_floating_point_v<A>) {
          const A larger = a > b ? a : b;
          const A or_b_nan = b != b ? b : larger;
          return a != a ? a : or_b_nan;
        }
        return a > b ? a : b;
      case CombinerKind::kMinimum:
        if constexpr (std::is_floating_point_v<A>) {
          const A smaller = a < b ? a : b;
          const A or_b_nan = b != b ? b : smaller;
          return a != a ? a : or_b_nan;
        }
        return a < b ? a : b;
      default:
        break;
    }
    if constexpr (std::is_integral_v<A>) {
      if (kind == CombinerKind::kAnd) return static_cast<A>(a & b);
      if (kind == CombinerKind::kOr) return static_cast<A>(a | b);
    }
  }
  return a;
}

// dst[e] = combiner(dst[e], src[e]) for e < n, with the kind fixed at compile time: a
// scatter's row of updates in one plain loop, not a switch per element.
template <CombinerKind K, typename T>
void CombineRowAs(T* __restrict dst, const T* __restrict src, int64_t n) {
  using A = AccumT<T>;
  auto combine = [](T d, T s) {
    return CastTo<T>(ApplyCombiner<A>(K, CastTo<A>(d), CastTo<A>(s)));
  };
  // Blocks of 8 with a fixed count: -O2's vectorizer (GCC's very-cheap cost model) takes only
  // loops it needs no remainder for; a segment sum's 32-wide rows ran scalar before.
  int64_t e = 0;
  if constexpr ((K == CombinerKind::kMaximum || K == CombinerKind::kMinimum) &&
                std::is_same_v<T, float>) {
    // The NaN-propagating select it leaves scalar even so (scatter-max of 32-float rows):
    // written with vector types, a NaN in dst wins and one in src fails the compare.
    using V4 = float __attribute__((vector_size(16)));
    for (; e + 4 <= n; e += 4) {
      V4 d, s;
      std::memcpy(&d, dst + e, sizeof d);
      std::memcpy(&s, src + e, sizeof s);
      const auto wins = (K == CombinerKind::kMaximum ? d > s : d < s) | (d != d);
      const V4 r = wins ? d : s;
      std::memcpy(dst + e, &r, sizeof r);
    }
  }
  for (; e + 8 <= n; e += 8)
    for (int j = 0; j < 8; ++j) dst[e + j] = combine(dst[e + j], src[e + j]);
  for (; e < n; ++e) dst[e] = combine(dst[e], src[e]);
}

// CombineRowAs for a kind known at run time (CombinerSupports<T>(kind) must hold).
template <typename T>
void CombineRow(CombinerKind kind, T* dst, const T* src, int64_t n) {
  switch (kind) {
    case CombinerKind::kAdd:
      return CombineRowAs<CombinerKind::kAdd>(dst, src, n);
    case CombinerKind::kMultiply:
      return CombineRowAs<CombinerKind::kMultiply>(dst, src, n);
    case CombinerKind::kMaximum:
      return CombineRowAs<CombinerKind::kMaximum>(dst, src, n);
    case CombinerKind::kMinimum:
      return CombineRowAs<CombinerKind::kMinimum>(dst, src, n);
    case CombinerKind::kAnd:
      return CombineRowAs<CombinerKind::kAnd>(dst, src, n);
    case CombinerKind::kOr:
      return CombineRowAs<CombinerKind::kOr>(dst, src, n);
    case CombinerKind::kAssign:
      return CombineRowAs<CombinerKind::kAssign>(dst, src, n);
    case CombinerKind::kOther:
      return;
  }
}

// Key that orders floats as XLA's TOTALORDER comparison does:
// -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN.
inline int64_t TotalOrderKey(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, 8);
  return TotalOrderKeyOfBits(bits);
}

// compare(a, b) with `direction`; floats use IEEE partial order or the total order.
template <typename T>
inline bool CompareScalars(T a, T b, ComparisonDirection dir, bool total_order) {
  if constexpr (IsComplexT<T>::value) {
    if (dir == ComparisonDirection::kEq) return a == b;
    if (dir == ComparisonDirection::kNe) return a != b;
    return false;
  } else if constexpr (kIsNarrowFloatT<T>) {
    return CompareScalars<float>(static_cast<float>(a), static_cast<float>(b), dir, total_order);
  } else if constexpr (kIsFloatT<T>) {
    if (total_order) {
      return CompareScalars<int64_t>(TotalOrderKey(static_cast<double>(static_cast<AccumT<T>>(a))),
                                     TotalOrderKey(static_cast<double>(static_cast<AccumT<T>>(b))),
                                     dir, false);
    }
  }
  if constexpr (!IsComplexT<T>::value) {
    switch (dir) {
      case ComparisonDirection::kEq:
        return a == b;
      case ComparisonDirection::kNe:
        return a != b;
      case ComparisonDirection::kGe:
        return a >= b;
      case ComparisonDirection::kGt:
        return a > b;
      case ComparisonDirection::kLe:
        return a <= b;
      case ComparisonDirection::kLt:
        return a < b;
    }
  }
  return false;
}

}  // namespace kiln::eval
