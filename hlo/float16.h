// 16-bit floating types (IEEE half and bfloat16) stored as bits, converted through float
// with round-to-nearest-even, the rounding XLA uses.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) {
    uint32_t u = FloatBits(f);
    if (std::isnan(f)) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN, sign kept
    } else {
      uint32_t rounding = 0x7fff + ((u >> 16) & 1);
      bits = static_cast<uint16_t>((u + rounding) >> 16);
    }
  }
  explicit bfloat16(double d) : bfloat16(static_cast<float>(d)) {}
  static bfloat16 FromBits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  operator float() const { return BitsToFloat(static_cast<uint32_t>(bits) << 16); }
};

struct half {
  uint16_t bits = 0;
  half() = default;
  explicit half(float f) { bits = FloatToHalfBits(f); }
  explicit half(double d) : half(static_cast<float>(d)) {}
  static half FromBits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
  operator float() const { return HalfBitsToFloat(bits); }

  static uint16_t FloatToHalfBits(float f) {
    uint32_t u = FloatBits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t absu = u & 0x7fffffff;
    if (absu >= 0x7f800000) {  // inf or nan
      return static_cast<uint16_t>(sign | 0x7c00 | (absu > 0x7f800000 ? 0x200 : 0));
    }
    if (absu >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to inf
    if (absu < 0x38800000) {  // subnormal half (or zero): scale into integer range
      float a = BitsToFloat(absu);
      // 2^24 * a rounded to nearest even gives the subnormal mantissa.
      float scaled = a * 16777216.0f;
      uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
      return static_cast<uint16_t>(sign | m);
    }
    uint32_t exp = ((absu >> 23) - 127 + 15) << 10;
    uint32_t mant = absu & 0x7fffff;
    uint32_t h = exp | (mant >> 13);
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  static float HalfBitsToFloat(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0) {
      float v = std::ldexp(static_cast<float>(mant), -24);
      return sign ? -v : v;
    }
    if (exp == 31) return BitsToFloat(sign | 0x7f800000 | (mant << 13));
    return BitsToFloat(sign | ((exp - 15 + 127) << 23) | (mant << 13));
  }
};

}  // namespace kiln
