// Maps primitive types to C++ types and dispatches a generic lambda on a runtime type.
#pragma once

#include <complex>
#include <cstdint>
#include <type_traits>

#include "hlo/float16.h"
#include "hlo/minifloat.h"
#include "hlo/primitive_type.h"

namespace kiln {

template <PrimitiveType T>
struct NativeTypeOf;
#define KILN_NATIVE(e, t)                 \
  template <>                             \
  struct NativeTypeOf<PrimitiveType::e> { \
    using type = t;                       \
  };
KILN_NATIVE(PRED, bool)
KILN_NATIVE(S8, int8_t)
KILN_NATIVE(S16, int16_t)
KILN_NATIVE(S32, int32_t)
KILN_NATIVE(S64, int64_t)
KILN_NATIVE(U8, uint8_t)
KILN_NATIVE(U16, uint16_t)
KILN_NATIVE(U32, uint32_t)
KILN_NATIVE(U64, uint64_t)
KILN_NATIVE(F16, half)
KILN_NATIVE(BF16, bfloat16)
KILN_NATIVE(F32, float)
KILN_NATIVE(F64, double)
KILN_NATIVE(C64, std::complex<float>)
KILN_NATIVE(C128, std::complex<double>)
KILN_NATIVE(F8E4M3FN, f8e4m3fn)
KILN_NATIVE(F8E5M2, f8e5m2)
KILN_NATIVE(F8E4M3FNUZ, f8e4m3fnuz)
KILN_NATIVE(F8E5M2FNUZ, f8e5m2fnuz)
KILN_NATIVE(F8E4M3B11FNUZ, f8e4m3b11fnuz)
KILN_NATIVE(F8E3M4, f8e3m4)
KILN_NATIVE(F8E4M3, f8e4m3)
KILN_NATIVE(F8E8M0FNU, f8e8m0fnu)
KILN_NATIVE(F4E2M1FN, f4e2m1fn)
// Sub-byte integers are held in a byte; code that computes on them widens and narrows
// (SignExtendSubByte / TruncateSubByte) around the computation.
KILN_NATIVE(S4, int8_t)
KILN_NATIVE(U4, uint8_t)
KILN_NATIVE(S2, int8_t)
KILN_NATIVE(U2, uint8_t)
KILN_NATIVE(S1, int8_t)
KILN_NATIVE(U1, uint8_t)
#undef KILN_NATIVE

template <typename T>
struct IsComplexT : std::false_type {};
template <typename T>
struct IsComplexT<std::complex<T>> : std::true_type {};
template <typename T>
constexpr bool kIsFloatT =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, half> ||
    std::is_same_v<T, bfloat16> || IsMiniFloatT<T>::value;
// Floating types held as bits and computed in float: f16, bf16 and the minifloats.
template <typename T>
constexpr bool kIsNarrowFloatT =
    std::is_same_v<T, half> || std::is_same_v<T, bfloat16> || IsMiniFloatT<T>::value;

// Calls f(T{}) with T the native type of `t`; `t` must be an array type.
template <typename F>
decltype(auto) PrimitiveTypeSwitch(PrimitiveType t, F&& f) {
  switch (t) {
    case PrimitiveType::PRED:
      return f(bool{});
    case PrimitiveType::S8:
      return f(int8_t{});
    case PrimitiveType::S16:
      return f(int16_t{});
    case PrimitiveType::S32:
      return f(int32_t{});
    case PrimitiveType::S64:
      return f(int64_t{});
    case PrimitiveType::U8:
      return f(uint8_t{});
    case PrimitiveType::U16:
      return f(uint16_t{});
    case PrimitiveType::U32:
      return f(uint32_t{});
    case PrimitiveType::U64:
      return f(uint64_t{});
    case PrimitiveType::F16:
      return f(half{});
    case PrimitiveType::BF16:
      return f(bfloat16{});
    case PrimitiveType::F32:
      return f(float{});
    case PrimitiveType::F64:
      return f(double{});
    case PrimitiveType::C64:
      return f(std::complex<float>{});
    case PrimitiveType::C128:
      return f(std::complex<double>{});
    case PrimitiveType::F8E4M3FN:
      return f(f8e4m3fn{});
    case PrimitiveType::F8E5M2:
      return f(f8e5m2{});
    case PrimitiveType::F8E4M3FNUZ:
      return f(f8e4m3fnuz{});
    case PrimitiveType::F8E5M2FNUZ:
      return f(f8e5m2fnuz{});
    case PrimitiveType::F8E4M3B11FNUZ:
      return f(f8e4m3b11fnuz{});
    case PrimitiveType::F8E3M4:
      return f(f8e3m4{});
    case PrimitiveType::F8E4M3:
      return f(f8e4m3{});
    case PrimitiveType::F8E8M0FNU:
      return f(f8e8m0fnu{});
    case PrimitiveType::F4E2M1FN:
      return f(f4e2m1fn{});
    case PrimitiveType::S4:
    case PrimitiveType::S2:
    case PrimitiveType::S1:
      return f(int8_t{});
    case PrimitiveType::U4:
    case PrimitiveType::U2:
    case PrimitiveType::U1:
      return f(uint8_t{});
    default:
      return f(float{});  // callers reject tuple/token first
  }
}

}  // namespace kiln
