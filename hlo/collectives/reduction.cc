#include "hlo/collectives/reduction.h"

#include <algorithm>
#include <complex>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "hlo/evaluator/combiner.h"
#include "hlo/native_type.h"

namespace kiln {
namespace {

template <typename T>
absl::Status Reduce(ReductionKind kind, T* acc, const T* in, size_t n) {
  // Narrow floats compute in float and round back, as XLA's CPU runtime does.
  using C = std::conditional_t<kIsNarrowFloatT<T>, float, T>;
  auto apply = [&](auto op) {
    for (size_t i = 0; i < n; ++i)
      acc[i] = static_cast<T>(op(static_cast<C>(acc[i]), static_cast<C>(in[i])));
  };
  if constexpr (std::is_same_v<T, bool>) {
    const bool any =
        kind == ReductionKind::kSum || kind == ReductionKind::kMax || kind == ReductionKind::kOr;
    for (size_t i = 0; i < n; ++i) acc[i] = any ? (acc[i] || in[i]) : (acc[i] && in[i]);
    return absl::OkStatus();
  } else {
    switch (kind) {
      case ReductionKind::kSum:
        apply([](C a, C b) { return a + b; });
        return absl::OkStatus();
      case ReductionKind::kProduct:
        apply([](C a, C b) { return a * b; });
        return absl::OkStatus();
      case ReductionKind::kMin:
      case ReductionKind::kMax:
        if constexpr (IsComplexT<C>::value) {
          return absl::InvalidArgumentError("complex numbers have no minimum or maximum");
        } else {
          const bool max = kind == ReductionKind::kMax;
          // NaN wins, as XLA's maximum and minimum propagate it.
          apply([max](C a, C b) {
            if (a != a) return a;
            if (b != b) return b;
            return max ? std::max(a, b) : std::min(a, b);
          });
          return absl::OkStatus();
        }
      case ReductionKind::kAnd:
      case ReductionKind::kOr:
        if constexpr (std::is_integral_v<C>) {
          const bool is_and = kind == ReductionKind::kAnd;
          apply([is_and](C a, C b) { return static_cast<C>(is_and ? (a & b) : (a | b)); });
          return absl::OkStatus();
        } else {
          return absl::InvalidArgumentError("and/or need integer or pred elements");
        }
    }
  }
  return absl::InvalidArgumentError("unknown reduction");
}

}  // namespace

std::optional<ReductionKind> MatchReductionKind(const HloComputation& to_apply) {
  switch (eval::ClassifyCombiner(to_apply)) {
    case eval::CombinerKind::kAdd:
      return ReductionKind::kSum;
    case eval::CombinerKind::kMultiply:
      return ReductionKind::kProduct;
    case eval::CombinerKind::kMinimum:
      return ReductionKind::kMin;
    case eval::CombinerKind::kMaximum:
      return ReductionKind::kMax;
    case eval::CombinerKind::kAnd:
      return ReductionKind::kAnd;
    case eval::CombinerKind::kOr:
      return ReductionKind::kOr;
    default:
      return std::nullopt;
  }
}

absl::Status ReduceInto(PrimitiveType type, ReductionKind kind, void* acc, const void* in,
                        size_t count) {
  if (!IsArrayType(type) || (BitWidth(type) < 8 && type != PrimitiveType::PRED))
    return absl::InvalidArgumentError(absl::StrCat(
        "collective reductions of ", std::string(PrimitiveTypeName(type)), " are not supported"));
  return PrimitiveTypeSwitch(type, [&](auto zero) {
    using T = decltype(zero);
    return Reduce<T>(kind, static_cast<T*>(acc), static_cast<const T*>(in), count);
  });
}

}  // namespace kiln
