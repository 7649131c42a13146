// Maps primitive types to C++ types and dispatches a generic lambda on a runtime type.
#pragma once

#include <complex>
#include <cstdint>
#include <type_traits>

#include "hlo/float16.h"
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
#undef KILN_NATIVE

template <typename T>
struct IsComplexT : std::false_type {};
template <typename T>
struct IsComplexT<std::complex<T>> : std::true_type {};
template <typename T>
constexpr bool kIsFloatT = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                           std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

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
    default:
      return f(float{});  // callers reject tuple/token first
  }
}

}  // namespace kiln
