// Minifloat encode/decode. Encoding works on the exact double value: find the quantum (the
// spacing of representable values around it), round the value to a multiple of it (ties to
// even), and assemble exponent and mantissa from the rounded multiple.
#include "hlo/minifloat.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln {

uint32_t MiniFloatFormat::max_finite_magnitude() const {
  switch (nan) {
    case Nan::kIeee:
      return (((1u << exponent_bits) - 1) << mantissa_bits) - 1;
    case Nan::kAllOnes:
      return magnitude_mask() - 1;
    case Nan::kNegativeZero:
    case Nan::kNone:
      return magnitude_mask();
  }
  return 0;
}

uint32_t MiniFloatFormat::overflow_bits(bool negative) const {
  const uint32_t sign = negative && has_sign ? 1u << (exponent_bits + mantissa_bits) : 0;
  switch (nan) {
    case Nan::kIeee:  // infinity
      return sign | (((1u << exponent_bits) - 1) << mantissa_bits);
    case Nan::kAllOnes:  // NaN
      return sign | magnitude_mask();
    case Nan::kNegativeZero:  // NaN
      return 1u << (exponent_bits + mantissa_bits);
    case Nan::kNone:  // saturate
      return sign | magnitude_mask();
  }
  return 0;
}

uint32_t MiniFloatFormat::nan_bits() const {
  switch (nan) {
    case Nan::kIeee:  // quiet NaN: the top mantissa bit
      return (((1u << exponent_bits) - 1) << mantissa_bits) | (1u << (mantissa_bits - 1));
    case Nan::kAllOnes:
      return magnitude_mask();
    case Nan::kNegativeZero:
    case Nan::kNone:  // no NaN: ml_dtypes writes -0
      return 1u << (exponent_bits + mantissa_bits);
  }
  return 0;
}

float MiniFloatToFloat(const MiniFloatFormat& f, uint32_t bits) {
  const int m = f.mantissa_bits;
  const bool negative = f.has_sign && ((bits >> (f.exponent_bits + m)) & 1);
  const uint32_t mag = bits & f.magnitude_mask();
  const uint32_t exp_field = mag >> m;
  const uint32_t mantissa = mag & ((1u << m) - 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  switch (f.nan) {
    case MiniFloatFormat::Nan::kIeee:
      if (exp_field == (1u << f.exponent_bits) - 1) {
        if (mantissa != 0) return nan;
        return negative ? -INFINITY : INFINITY;
      }
      break;
    case MiniFloatFormat::Nan::kAllOnes:
      if (mag == f.magnitude_mask()) return nan;
      break;
    case MiniFloatFormat::Nan::kNegativeZero:
      if (negative && mag == 0) return nan;
      break;
    case MiniFloatFormat::Nan::kNone:
      break;
  }
  double value;
  if (f.has_subnormals() && exp_field == 0) {
    value = std::ldexp(static_cast<double>(mantissa), 1 - f.bias - m);
  } else {
    value = std::ldexp(static_cast<double>((1u << m) + mantissa),
                       static_cast<int>(exp_field) - f.bias - m);
  }
  return static_cast<float>(negative ? -value : value);
}

uint32_t MiniFloatFromDouble(const MiniFloatFormat& f, double v) {
  const int m = f.mantissa_bits;
  const bool negative = std::signbit(v);
  const uint32_t sign = negative && f.has_sign ? 1u << (f.exponent_bits + m) : 0;
  if (std::isnan(v))
    return f.nan == MiniFloatFormat::Nan::kNegativeZero ? f.nan_bits() : sign | f.nan_bits();
  // Without a sign bit (e8m0fnu) negative values and zero (which it cannot hold) are NaN.
  if (!f.has_sign && (negative || v == 0)) return f.nan_bits();
  const double a = std::fabs(v);
  const bool unsigned_zero = f.nan == MiniFloatFormat::Nan::kNegativeZero;
  if (a == 0) return unsigned_zero ? 0 : sign;
  if (std::isinf(a)) return f.overflow_bits(negative);
  const int emin = f.has_subnormals() ? 1 - f.bias : -f.bias;  // smallest normal exponent
  const int e = std::max(std::ilogb(a), emin);
  const double q = std::nearbyint(std::ldexp(a, m - e));  // ties to even (default rounding)
  const int64_t mag = (static_cast<int64_t>(e + f.bias - 1) << m) + static_cast<int64_t>(q);
  if (mag > static_cast<int64_t>(f.max_finite_magnitude())) return f.overflow_bits(negative);
  if (mag <= 0) {
    if (!f.has_subnormals()) return 0;  // below 2^-bias: the smallest value (ml_dtypes)
    return unsigned_zero ? 0 : sign;
  }
  return sign | static_cast<uint32_t>(mag);
}

}  // namespace kiln
