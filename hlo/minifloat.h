// The 8- and 4-bit floating types of current XLA and ml_dtypes (f8e4m3fn, f8e5m2, ...,
// f4e2m1fn), each one byte in memory, converted through float/double with one
// round-to-nearest-even rounding, as ml_dtypes and XLA do.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>

#include "hlo/primitive_type.h"

namespace kiln {

// How a format spends its encodings. Names follow the suffixes: fn = finite (no infinity),
// uz = unsigned zero (no -0; its encoding 0x80 is the NaN), fnu = finite and unsigned.
struct MiniFloatFormat {
  enum class Nan {
    kIeee,          // exponent all ones: infinity with mantissa 0, NaN otherwise (e5m2, e4m3)
    kAllOnes,       // only the all-ones magnitude is NaN, no infinity (e4m3fn, e8m0fnu)
    kNegativeZero,  // the sign bit alone is NaN, no infinity, no -0 (the fnuz types)
    kNone,          // neither NaN nor infinity: out-of-range values saturate (f4e2m1fn)
  };
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_sign;  // false for f8e8m0fnu
  Nan nan;

  int total_bits() const { return exponent_bits + mantissa_bits + (has_sign ? 1 : 0); }
  // Encodings without the sign bit.
  uint32_t magnitude_mask() const { return (1u << (exponent_bits + mantissa_bits)) - 1; }
  // The largest finite magnitude's encoding.
  uint32_t max_finite_magnitude() const;
  // Formats without a mantissa have no subnormals: encoding 0 is 2^-bias.
  bool has_subnormals() const { return mantissa_bits > 0; }
  // The encoding an out-of-range (or NaN) value becomes; `negative` picks the sign of an
  // infinity or of a saturated value.
  uint32_t overflow_bits(bool negative) const;
  uint32_t nan_bits() const;
};

// The format of a minifloat type; nullopt for every other type.
constexpr std::optional<MiniFloatFormat> MiniFloatFormatOf(PrimitiveType t) {
  using N = MiniFloatFormat::Nan;
  switch (t) {
    case PrimitiveType::F8E4M3FN:
      return MiniFloatFormat{4, 3, 7, true, N::kAllOnes};
    case PrimitiveType::F8E5M2:
      return MiniFloatFormat{5, 2, 15, true, N::kIeee};
    case PrimitiveType::F8E4M3FNUZ:
      return MiniFloatFormat{4, 3, 8, true, N::kNegativeZero};
    case PrimitiveType::F8E5M2FNUZ:
      return MiniFloatFormat{5, 2, 16, true, N::kNegativeZero};
    case PrimitiveType::F8E4M3B11FNUZ:
      return MiniFloatFormat{4, 3, 11, true, N::kNegativeZero};
    case PrimitiveType::F8E3M4:
      return MiniFloatFormat{3, 4, 3, true, N::kIeee};
    case PrimitiveType::F8E4M3:
      return MiniFloatFormat{4, 3, 7, true, N::kIeee};
    case PrimitiveType::F8E8M0FNU:
      return MiniFloatFormat{8, 0, 127, false, N::kAllOnes};
    case PrimitiveType::F4E2M1FN:
      return MiniFloatFormat{2, 1, 1, true, N::kNone};
    default:
      return std::nullopt;
  }
}

// Decoding is exact (every value is a float); encoding rounds to nearest even once.
float MiniFloatToFloat(const MiniFloatFormat& f, uint32_t bits);
uint32_t MiniFloatFromDouble(const MiniFloatFormat& f, double v);

// One byte holding a minifloat of type T, computed in float (as XLA's CPU backend does).
template <PrimitiveType T>
struct minifloat {
  uint8_t bits = 0;
  minifloat() = default;
  explicit minifloat(double d)
      : bits(static_cast<uint8_t>(MiniFloatFromDouble(*MiniFloatFormatOf(T), d))) {}
  explicit minifloat(float f) : minifloat(static_cast<double>(f)) {}
  static minifloat FromBits(uint8_t b) {
    minifloat m;
    m.bits = b;
    return m;
  }
  operator float() const { return MiniFloatToFloat(*MiniFloatFormatOf(T), bits); }
};

using f8e4m3fn = minifloat<PrimitiveType::F8E4M3FN>;
using f8e5m2 = minifloat<PrimitiveType::F8E5M2>;
using f8e4m3fnuz = minifloat<PrimitiveType::F8E4M3FNUZ>;
using f8e5m2fnuz = minifloat<PrimitiveType::F8E5M2FNUZ>;
using f8e4m3b11fnuz = minifloat<PrimitiveType::F8E4M3B11FNUZ>;
using f8e3m4 = minifloat<PrimitiveType::F8E3M4>;
using f8e4m3 = minifloat<PrimitiveType::F8E4M3>;
using f8e8m0fnu = minifloat<PrimitiveType::F8E8M0FNU>;
using f4e2m1fn = minifloat<PrimitiveType::F4E2M1FN>;

template <typename T>
struct IsMiniFloatT : std::false_type {};
template <PrimitiveType P>
struct IsMiniFloatT<minifloat<P>> : std::true_type {};

}  // namespace kiln
