// Elementwise comparison with dtype tolerances, reporting max abs/rel errors.
#include "tools/compare.h"

#include <cmath>
#include <complex>

#include "fmt/format.h"

namespace kiln {

Tolerance ToleranceFor(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::F16: return {1e-3, 1e-2};
    case PrimitiveType::BF16: return {1e-2, 2e-2};
    case PrimitiveType::F32:
    case PrimitiveType::C64: return {1e-4, 1e-4};
    case PrimitiveType::F64:
    case PrimitiveType::C128: return {1e-12, 1e-10};
    default: return {0, 0};  // pred and integers: exact
  }
}

namespace {

// Real and imaginary parts of element i (imaginary 0 for real types).
std::complex<double> ElementAt(const Literal& l, int64_t i) {
  return PrimitiveTypeSwitch(l.shape().element_type(), [&](auto zero) -> std::complex<double> {
    using T = decltype(zero);
    T v = l.data<T>()[i];
    if constexpr (IsComplexT<T>::value) {
      return {static_cast<double>(v.real()), static_cast<double>(v.imag())};
    } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
      return {static_cast<double>(static_cast<float>(v)), 0.0};
    } else {
      return {static_cast<double>(v), 0.0};
    }
  });
}

bool IsNan(std::complex<double> v) { return std::isnan(v.real()) || std::isnan(v.imag()); }

}  // namespace

Comparison CompareLiterals(const Literal& actual, const Literal& reference) {
  Comparison c;
  if (!actual.shape().Compatible(reference.shape())) {
    c.ok = false;
    c.detail = fmt::format("shape {} differs from the reference's {}", actual.shape().ToString(false),
                           reference.shape().ToString(false));
    return c;
  }
  if (!actual.shape().IsArray()) return c;
  const Tolerance tol = ToleranceFor(reference.shape().element_type());
  const int64_t n = reference.element_count();
  const bool exact = tol.atol == 0 && tol.rtol == 0;
  // The absolute bound scales with the output's largest magnitude: rounding in dots and
  // reductions grows with the operands, not with an element that happens to cancel to ~0.
  double scale = 1;
  if (!exact) {
    for (int64_t i = 0; i < n; ++i) {
      double m = std::abs(ElementAt(reference, i));
      if (std::isfinite(m)) scale = std::max(scale, m);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    bool bad = false;
    double abs_err = 0, rel_err = 0;
    if (exact) {
      // Integers compared as integers: doubles lose precision past 2^53.
      bool same = IsUnsignedInt(reference.shape().element_type())
                      ? actual.GetAsUint64(i) == reference.GetAsUint64(i)
                      : actual.GetAsInt64(i) == reference.GetAsInt64(i);
      if (!same) {
        abs_err = std::abs(static_cast<double>(actual.GetAsInt64(i)) -
                           static_cast<double>(reference.GetAsInt64(i)));
        double r = std::abs(static_cast<double>(reference.GetAsInt64(i)));
        rel_err = r > 0 ? abs_err / r : 0;
        bad = true;
      }
    } else {
      std::complex<double> a = ElementAt(actual, i), r = ElementAt(reference, i);
      if (IsNan(a) || IsNan(r)) {
        bad = IsNan(a) != IsNan(r);
      } else if (std::isinf(a.real()) || std::isinf(r.real()) || std::isinf(a.imag()) ||
                 std::isinf(r.imag())) {
        bad = a != r;
      } else {
        abs_err = std::abs(a - r);
        double mag = std::abs(r);
        rel_err = mag > 0 ? abs_err / mag : 0;
        bad = abs_err > tol.atol * scale + tol.rtol * mag;
      }
    }
    c.max_abs = std::max(c.max_abs, abs_err);
    c.max_rel = std::max(c.max_rel, rel_err);
    if (bad) {
      if (c.mismatches == 0) {
        std::complex<double> a = ElementAt(actual, i), r = ElementAt(reference, i);
        c.detail = fmt::format("first mismatch at linear index {}: {} vs reference {}", i,
                               a.real(), r.real());
      }
      ++c.mismatches;
      c.ok = false;
    }
  }
  return c;
}

}  // namespace kiln
