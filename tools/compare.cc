// Element-by-element comparison with per-dtype tolerances (see compare.h).
#include "tools/compare.h"

#include <cmath>
#include <complex>
#include <limits>

#include "fmt/format.h"

namespace kiln {

Tolerance ToleranceFor(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::F16:
      return {1e-3, 1e-2};
    case PrimitiveType::BF16:
      return {1e-2, 2e-2};
    case PrimitiveType::F32:
    case PrimitiveType::C64:
      return {1e-4, 1e-4};
    case PrimitiveType::F64:
    case PrimitiveType::C128:
      return {1e-12, 1e-10};
    default:
      break;
  }
  if (std::optional<MiniFloatFormat> f = MiniFloatFormatOf(type)) {
    // One unit in the last place, relative; absolute about the smallest normal of f8e4m3.
    return {1.0 / 64, std::ldexp(1.0, -f->mantissa_bits)};
  }
  return {0, 0};  // pred and integers: exact
}

std::string FormatIndex(const std::vector<int64_t>& dims, int64_t linear) {
  std::vector<int64_t> index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] > 0) {
      index[d] = linear % dims[d];
      linear /= dims[d];
    }
  }
  std::string s = "[";
  for (size_t d = 0; d < index.size(); ++d) s += fmt::format("{}{}", d ? "," : "", index[d]);
  return s + "]";
}

namespace {

// Real and imaginary parts of element i (imaginary 0 for real types).
std::complex<double> ElementAt(const Literal& l, int64_t i) {
  if (IsSubByteInt(l.shape().element_type())) return {l.GetAsDouble(i), 0.0};
  return PrimitiveTypeSwitch(l.shape().element_type(), [&](auto zero) -> std::complex<double> {
    using T = decltype(zero);
    T v = l.data<T>()[i];
    if constexpr (IsComplexT<T>::value) {
      return {static_cast<double>(v.real()), static_cast<double>(v.imag())};
    } else if constexpr (kIsNarrowFloatT<T>) {
      return {static_cast<double>(static_cast<float>(v)), 0.0};
    } else {
      return {static_cast<double>(v), 0.0};
    }
  });
}

bool IsNan(std::complex<double> v) { return std::isnan(v.real()) || std::isnan(v.imag()); }
bool IsInf(std::complex<double> v) { return std::isinf(v.real()) || std::isinf(v.imag()); }

// How one element fares: `excess` is its error over its bound (> 1 fails); non-finite
// mismatches count as infinitely far.
struct ElementCheck {
  double abs_err = 0, rel_err = 0, excess = 0;
  double actual = 0, reference = 0;
};

ElementCheck CheckExact(const Literal& actual, const Literal& reference, int64_t i) {
  ElementCheck e;
  const bool is_unsigned = IsUnsignedInt(reference.shape().element_type());
  // Integers compared as integers: doubles lose precision past 2^53.
  const bool same = is_unsigned ? actual.GetAsUint64(i) == reference.GetAsUint64(i)
                                : actual.GetAsInt64(i) == reference.GetAsInt64(i);
  e.actual = is_unsigned ? static_cast<double>(actual.GetAsUint64(i))
                         : static_cast<double>(actual.GetAsInt64(i));
  e.reference = is_unsigned ? static_cast<double>(reference.GetAsUint64(i))
                            : static_cast<double>(reference.GetAsInt64(i));
  if (!same) {
    e.abs_err = std::abs(e.actual - e.reference);
    e.rel_err = e.reference != 0 ? e.abs_err / std::abs(e.reference) : 0;
    e.excess = std::numeric_limits<double>::infinity();
  }
  return e;
}

ElementCheck CheckInexact(const Literal& actual, const Literal& reference, int64_t i,
                          const Tolerance& tol) {
  ElementCheck e;
  const std::complex<double> a = ElementAt(actual, i), r = ElementAt(reference, i);
  e.actual = a.real();
  e.reference = r.real();
  const double inf = std::numeric_limits<double>::infinity();
  if (IsNan(a) || IsNan(r)) {
    e.excess = IsNan(a) == IsNan(r) ? 0 : inf;
  } else if (IsInf(a) || IsInf(r)) {
    e.excess = a == r ? 0 : inf;
  } else {
    e.abs_err = std::abs(a - r);
    const double mag = std::abs(r);
    e.rel_err = mag > 0 ? e.abs_err / mag : 0;
    const double bound = tol.atol + tol.rtol * mag;
    e.excess = bound > 0 ? e.abs_err / bound : (e.abs_err > 0 ? inf : 0);
  }
  return e;
}

}  // namespace

Comparison CompareLiterals(const Literal& actual, const Literal& reference,
                           std::optional<Tolerance> tolerance) {
  Comparison c;
  if (!actual.shape().Compatible(reference.shape())) {
    c.ok = false;
    c.detail = fmt::format("shape {} differs from the reference's {}",
                           actual.shape().ToString(false), reference.shape().ToString(false));
    return c;
  }
  if (!actual.shape().IsArray()) return c;
  const PrimitiveType type = reference.shape().element_type();
  const Tolerance tol = tolerance.value_or(ToleranceFor(type));
  const bool exact = !IsFloating(type) && !IsComplex(type);
  const int64_t n = reference.element_count();
  int64_t worst = -1;
  ElementCheck worst_check;
  for (int64_t i = 0; i < n; ++i) {
    ElementCheck e =
        exact ? CheckExact(actual, reference, i) : CheckInexact(actual, reference, i, tol);
    c.max_abs = std::max(c.max_abs, e.abs_err);
    c.max_rel = std::max(c.max_rel, e.rel_err);
    if (e.excess > 1) ++c.mismatches;
    if (worst < 0 || e.excess > worst_check.excess) {
      worst = i;
      worst_check = e;
    }
  }
  c.ok = c.mismatches == 0;
  if (worst >= 0) {
    c.worst_index = FormatIndex(reference.shape().dimensions(), worst);
    c.worst_actual = worst_check.actual;
    c.worst_reference = worst_check.reference;
  }
  if (!c.ok) {
    c.detail = fmt::format("worst at {}: {} vs reference {} (|diff| {:.3g}, bound {:.3g})",
                           c.worst_index, c.worst_actual, c.worst_reference, worst_check.abs_err,
                           tol.atol + tol.rtol * std::abs(c.worst_reference));
  }
  return c;
}

}  // namespace kiln
