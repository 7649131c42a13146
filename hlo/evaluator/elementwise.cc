// Elementwise opcodes: unary math, binary arithmetic, compare, select, clamp, convert,
// bitcast-convert, reduce-precision and friends, with XLA's edge-case semantics.
#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/evaluator_util.h"
#include "hlo/total_order.h"

namespace kiln::eval {
namespace {

// f16, bf16 and the minifloats are computed in float and rounded back after every op, as XLA
// does.
template <typename T>
using Compute = std::conditional_t<kIsNarrowFloatT<T>, float, T>;
template <typename T>
constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <typename T>
struct ComplexPart {
  using type = T;
};
template <typename T>
struct ComplexPart<std::complex<T>> {
  using type = T;
};

std::string OpName(const HloInstruction& instr) {
  return std::string(HloOpcodeString(instr.opcode()));
}

absl::Status TypeError(const HloInstruction& instr, PrimitiveType t) {
  return InvalidArgument(instr, absl::StrCat("'", OpName(instr), "' does not support element type ",
                                             std::string(PrimitiveTypeName(t))));
}

// --- Loops. They index spans directly so the common f32 paths vectorise. ----------------

template <typename In, typename Out, typename F>
void UnaryLoop(const Literal& a, Literal& out, F f) {
  auto src = a.data<In>();
  auto dst = out.data<Out>();
  const size_t n = dst.size();
  for (size_t i = 0; i < n; ++i) dst[i] = f(src[i]);
}

// Operands of a binary op have the result's element count, or are scalars (one element).
template <typename A, typename B, typename Out, typename F>
void BinaryLoop(const Literal& a, const Literal& b, Literal& out, F f) {
  auto x = a.data<A>();
  auto y = b.data<B>();
  auto d = out.data<Out>();
  const size_t n = d.size();
  if (x.size() == n && y.size() == n) {
    for (size_t i = 0; i < n; ++i) d[i] = f(x[i], y[i]);
  } else if (x.size() == n) {
    const B s = y[0];
    for (size_t i = 0; i < n; ++i) d[i] = f(x[i], s);
  } else if (y.size() == n) {
    const A s = x[0];
    for (size_t i = 0; i < n; ++i) d[i] = f(s, y[i]);
  } else {
    for (size_t i = 0; i < n; ++i) d[i] = f(x[0], y[0]);
  }
}

// --- Conversion between element types. ---------------------------------------------------

template <typename From, typename To>
To ConvertElement(From v) {
  if constexpr (std::is_same_v<From, To>) {
    return v;
  } else if constexpr (IsComplexT<From>::value) {
    if constexpr (IsComplexT<To>::value) {
      using P = typename To::value_type;
      return To(static_cast<P>(v.real()), static_cast<P>(v.imag()));
    } else if constexpr (std::is_same_v<To, bool>) {
      return v != From(0);
    } else {
      // Complex to real keeps the real part.
      return ConvertElement<typename From::value_type, To>(v.real());
    }
  } else if constexpr (IsComplexT<To>::value) {
    using P = typename To::value_type;
    return To(ConvertElement<From, P>(v), P(0));
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<Compute<From>>(v) != Compute<From>(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return ConvertElement<uint8_t, To>(v ? 1 : 0);
  } else if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
    return static_cast<To>(v);  // two's complement wrap, as XLA
  } else if constexpr (std::is_integral_v<From>) {
    // Integer to float: one rounding into f32/f64; f16/bf16 round through f32 as XLA does.
    if constexpr (kIsNarrowFloatT<To>) {
      return To(static_cast<float>(v));
    } else {
      return static_cast<To>(v);
    }
  } else if constexpr (kIsFloatT<To>) {
    // Float to float. f64 -> f16/bf16 goes through f32 like XLA's convert; minifloats
    // round once from the exact value.
    if constexpr (IsMiniFloatT<To>::value) {
      return To(static_cast<double>(static_cast<Compute<From>>(v)));
    } else if constexpr (kIsNarrowFloatT<To>) {
      return To(static_cast<float>(static_cast<Compute<From>>(v)));
    } else {
      return static_cast<To>(static_cast<Compute<From>>(v));
    }
  } else {
    // Float to integer: NaN -> 0, saturate at the bounds (compared in the source type).
    using C = Compute<From>;
    C x = static_cast<C>(v);
    if (std::isnan(x)) return To(0);
    if (x <= static_cast<C>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (x >= static_cast<C>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  }
}

absl::StatusOr<Literal> EvalConvert(const HloInstruction& instr, const Literal& a) {
  const PrimitiveType to = instr.shape().element_type();
  if (IsSubByteInt(to) && !IsInteger(a.shape().element_type())) {
    return a.Convert(to);  // saturates at the narrow type's bounds, not int8's
  }
  Literal out(instr.shape());
  PrimitiveTypeSwitch(a.shape().element_type(), [&](auto from_tag) {
    using From = decltype(from_tag);
    PrimitiveTypeSwitch(out.shape().element_type(), [&](auto to_tag) {
      using To = decltype(to_tag);
      UnaryLoop<From, To>(a, out, [](From v) { return ConvertElement<From, To>(v); });
    });
  });
  return out;
}

// Same bytes, new type. Different widths add or drop a minor dimension (XLA semantics); in
// row-major storage either way the bytes are unchanged.
absl::StatusOr<Literal> EvalBitcastConvert(const HloInstruction& instr, const Literal& a) {
  Literal out(instr.shape());
  if (out.size_bytes() != a.size_bytes()) {
    return InvalidArgument(instr,
                           absl::StrCat("bitcast-convert from ", a.shape().ToString(false), " to ",
                                        instr.shape().ToString(false), " changes the byte size"));
  }
  if (a.size_bytes() > 0) std::memcpy(out.untyped_data(), a.untyped_data(), a.size_bytes());
  if (const int bits = BitWidth(out.shape().element_type());
      bits < 8 && out.shape().element_type() != PrimitiveType::PRED) {
    for (uint8_t& b : out.data<uint8_t>()) b &= static_cast<uint8_t>((1 << bits) - 1);
  }
  return out;
}

// --- reduce-precision, bit-exact with XLA's definition. -----------------------------------

// Works on the bits of a float with kMant mantissa and kExp exponent bits; NaN inputs are
// handled by the caller.
template <typename U, int kMant, int kExp>
U ReducePrecisionBits(U v, int exponent_bits, int mantissa_bits) {
  constexpr int kBits = sizeof(U) * 8;
  if (mantissa_bits < kMant) {
    // Round to nearest even at the new last mantissa bit, then truncate. A carry into the
    // exponent is the right answer (the mantissa becomes zero).
    const U last_bit_mask = U(U{1} << (kMant - mantissa_bits));
    const U base_bias = U((last_bit_mask >> 1) - 1);
    const U last_bit = U((v & last_bit_mask) >> (kMant - mantissa_bits));
    v = U(U(v + last_bit + base_bias) & U(~U(last_bit_mask - 1)));
  }
  if (exponent_bits < kExp) {
    const U sign_mask = U(U{1} << (kBits - 1));
    const U exp_mask = U(((U{1} << kExp) - 1) << kMant);
    const U bias = U((U{1} << (kExp - 1)) - 1);
    const U reduced_bias = U((U{1} << (exponent_bits - 1)) - 1);
    const U max_exp = U(bias + reduced_bias);
    const U min_exp = U(bias - reduced_bias);
    const U x_exp = U(v & exp_mask);
    const U signed_zero = U(v & sign_mask);
    if (x_exp > U(max_exp << kMant)) {
      v = U(signed_zero | exp_mask);  // overflow: signed infinity
    } else if (x_exp <= U(min_exp << kMant)) {
      v = signed_zero;  // underflow, denormals included: signed zero
    }
  }
  return v;
}

template <typename T, typename U, int kMant, int kExp>
T ReducePrecisionValue(T input, int exponent_bits, int mantissa_bits) {
  if (std::isnan(static_cast<Compute<T>>(input))) {
    // NaNs stay NaN unless no mantissa bits are left to carry them.
    return mantissa_bits > 0 ? input : T(std::numeric_limits<float>::infinity());
  }
  U v;
  std::memcpy(&v, static_cast<const void*>(&input), sizeof(U));
  v = ReducePrecisionBits<U, kMant, kExp>(v, exponent_bits, mantissa_bits);
  T out;
  std::memcpy(static_cast<void*>(&out), &v, sizeof(U));
  return out;
}

absl::StatusOr<Literal> EvalReducePrecision(const HloInstruction& instr, const Literal& a) {
  const int e = static_cast<int>(instr.attrs().exponent_bits);
  const int m = static_cast<int>(instr.attrs().mantissa_bits);
  if (e < 1 || m < 0) {
    return InvalidArgument(instr, absl::StrCat("reduce-precision needs exponent_bits >= 1 and "
                                               "mantissa_bits >= 0, got ",
                                               e, " and ", m));
  }
  Literal out(instr.shape());
  // Each type is reduced on its own bits (f16 denormals survive when exponent_bits >= 5).
  switch (a.shape().element_type()) {
    case PrimitiveType::F32:
      UnaryLoop<float, float>(
          a, out, [&](float x) { return ReducePrecisionValue<float, uint32_t, 23, 8>(x, e, m); });
      return out;
    case PrimitiveType::F64:
      UnaryLoop<double, double>(a, out, [&](double x) {
        return ReducePrecisionValue<double, uint64_t, 52, 11>(x, e, m);
      });
      return out;
    case PrimitiveType::F16:
      UnaryLoop<half, half>(
          a, out, [&](half x) { return ReducePrecisionValue<half, uint16_t, 10, 5>(x, e, m); });
      return out;
    case PrimitiveType::BF16:
      UnaryLoop<bfloat16, bfloat16>(a, out, [&](bfloat16 x) {
        return ReducePrecisionValue<bfloat16, uint16_t, 7, 8>(x, e, m);
      });
      return out;
    default:
      return TypeError(instr, a.shape().element_type());
  }
}

// --- Unary ops. ---------------------------------------------------------------------------

template <typename T>
T Logistic(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// Floating (f16, bf16, f32, f64) and complex unary math; returns false when `op` is not one.
template <typename T>
bool FloatOrComplexUnary(HloOpcode op, const Literal& a, Literal& out) {
  using C = Compute<T>;
#define KILN_UNARY(OPC, EXPR)         \
  case HloOpcode::OPC:                \
    UnaryLoop<T, T>(a, out, [](T t) { \
      C x = static_cast<C>(t);        \
      return static_cast<T>(EXPR);    \
    });                               \
    return true;
  switch (op) {
    KILN_UNARY(kNegate, -x)
    KILN_UNARY(kExp, std::exp(x))
    KILN_UNARY(kLog, std::log(x))
    KILN_UNARY(kSqrt, std::sqrt(x))
    KILN_UNARY(kRsqrt, C(1) / std::sqrt(x))
    KILN_UNARY(kSin, std::sin(x))
    KILN_UNARY(kCos, std::cos(x))
    KILN_UNARY(kTan, std::tan(x))
    KILN_UNARY(kTanh, std::tanh(x))
    KILN_UNARY(kLogistic, Logistic(x))
    default:
      break;
  }
  if constexpr (IsComplexT<T>::value) {
    switch (op) {
      KILN_UNARY(kExpm1, std::exp(x) - C(1))
      KILN_UNARY(kLog1p, std::log(C(1) + x))
      KILN_UNARY(kSign, std::abs(x) == 0 ? C(0) : x / std::abs(x))
      default:
        return false;
    }
  } else {
    switch (op) {
      KILN_UNARY(kExpm1, std::expm1(x))
      KILN_UNARY(kLog1p, std::log1p(x))
      KILN_UNARY(kCbrt, std::cbrt(x))
      KILN_UNARY(kErf, std::erf(x))
      KILN_UNARY(kAbs, std::fabs(x))
      KILN_UNARY(kCeil, std::ceil(x))
      KILN_UNARY(kFloor, std::floor(x))
      KILN_UNARY(kRoundNearestAfz, std::round(x))
      KILN_UNARY(kRoundNearestEven, std::nearbyint(x))  // default FE_TONEAREST mode
      KILN_UNARY(kSign, std::isnan(x) ? x : (x == C(0) ? x : std::copysign(C(1), x)))
      default:
        return false;
    }
  }
#undef KILN_UNARY
}

template <typename T>
bool IntegerUnary(HloOpcode op, const Literal& a, Literal& out) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case HloOpcode::kNegate:
      UnaryLoop<T, T>(a, out, [](T x) { return static_cast<T>(U(0) - static_cast<U>(x)); });
      return true;
    case HloOpcode::kAbs:
      UnaryLoop<T, T>(a, out, [](T x) {
        if constexpr (std::is_signed_v<T>) {
          return x < 0 ? static_cast<T>(U(0) - static_cast<U>(x)) : x;  // INT_MIN stays
        } else {
          return x;
        }
      });
      return true;
    case HloOpcode::kNot:
      UnaryLoop<T, T>(a, out, [](T x) { return static_cast<T>(~static_cast<U>(x)); });
      return true;
    case HloOpcode::kPopulationCount:
      UnaryLoop<T, T>(a, out, [](T x) { return static_cast<T>(std::popcount(static_cast<U>(x))); });
      return true;
    case HloOpcode::kClz:
      UnaryLoop<T, T>(a, out,
                      [](T x) { return static_cast<T>(std::countl_zero(static_cast<U>(x))); });
      return true;
    case HloOpcode::kSign:
      UnaryLoop<T, T>(a, out, [](T x) { return static_cast<T>((T(0) < x) - (x < T(0))); });
      return true;
    default:
      return false;
  }
}

absl::StatusOr<Literal> EvalUnary(const HloInstruction& instr, const Literal& a) {
  const HloOpcode op = instr.opcode();
  const PrimitiveType in_type = a.shape().element_type();
  switch (op) {
    case HloOpcode::kConvert:
      return EvalConvert(instr, a);
    case HloOpcode::kBitcastConvert:
      return EvalBitcastConvert(instr, a);
    case HloOpcode::kReducePrecision:
      return EvalReducePrecision(instr, a);
    case HloOpcode::kCopy: {
      // Literals are logical row-major, so a layout-changing copy moves no bytes.
      Literal out(instr.shape());
      if (a.size_bytes() > 0) std::memcpy(out.untyped_data(), a.untyped_data(), a.size_bytes());
      return out;
    }
    default:
      break;
  }
  Literal out(instr.shape());
  if (out.element_count() != a.element_count()) {
    return InvalidArgument(
        instr, absl::StrCat("operand shape ", a.shape().ToString(false),
                            " does not match result shape ", instr.shape().ToString(false)));
  }
  const PrimitiveType out_type = out.shape().element_type();

  // Ops whose result type differs from the operand type.
  if (op == HloOpcode::kIsFinite) {
    if (!IsFloating(in_type) || out_type != PrimitiveType::PRED) return TypeError(instr, in_type);
    PrimitiveTypeSwitch(in_type, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (kIsFloatT<T>) {
        UnaryLoop<T, bool>(a, out, [](T x) { return std::isfinite(static_cast<Compute<T>>(x)); });
      }
    });
    return out;
  }
  if (op == HloOpcode::kReal || op == HloOpcode::kImag ||
      (op == HloOpcode::kAbs && IsComplex(in_type))) {
    bool ok = false;
    PrimitiveTypeSwitch(in_type, [&](auto tag) {
      using T = decltype(tag);
      using P = typename ComplexPart<T>::type;
      if constexpr (IsComplexT<T>::value) {
        if (out_type != (sizeof(P) == 4 ? PrimitiveType::F32 : PrimitiveType::F64)) return;
        ok = true;
        if (op == HloOpcode::kReal)
          UnaryLoop<T, P>(a, out, [](T x) { return x.real(); });
        else if (op == HloOpcode::kImag)
          UnaryLoop<T, P>(a, out, [](T x) { return x.imag(); });
        else
          UnaryLoop<T, P>(a, out, [](T x) { return std::abs(x); });
      } else if constexpr (kIsFloatT<T>) {
        if (out_type != in_type) return;
        ok = true;
        if (op == HloOpcode::kReal)
          UnaryLoop<T, T>(a, out, [](T x) { return x; });
        else
          UnaryLoop<T, T>(a, out, [](T) { return T(0.0f); });
      }
    });
    if (!ok) return TypeError(instr, in_type);
    return out;
  }

  if (out_type != in_type) {
    return InvalidArgument(
        instr, absl::StrCat("result element type ", std::string(PrimitiveTypeName(out_type)),
                            " differs from operand element type ",
                            std::string(PrimitiveTypeName(in_type))));
  }
  bool handled = false;
  PrimitiveTypeSwitch(in_type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      if (op == HloOpcode::kNot) {
        UnaryLoop<bool, bool>(a, out, [](bool x) { return !x; });
        handled = true;
      } else if (op == HloOpcode::kAbs || op == HloOpcode::kSign) {
        UnaryLoop<bool, bool>(a, out, [](bool x) { return x; });
        handled = true;
      } else if (op == HloOpcode::kNegate) {
        UnaryLoop<bool, bool>(a, out, [](bool x) { return x; });  // -1 wraps to true
        handled = true;
      }
    } else if constexpr (std::is_integral_v<T>) {
      handled = IntegerUnary<T>(op, a, out);
    } else {
      handled = FloatOrComplexUnary<T>(op, a, out);
    }
  });
  if (!handled) return TypeError(instr, in_type);
  return out;
}

// --- Binary ops. --------------------------------------------------------------------------

// Integer arithmetic in an unsigned type at least as wide as int so that overflow wraps
// instead of being undefined.
template <typename T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
constexpr bool ShiftOutOfRange(T amount) {
  using U = std::make_unsigned_t<T>;
  return static_cast<U>(amount) >= sizeof(T) * 8;
}

template <typename T>
T IntPow(T base, T exp) {
  if (base == T(1) || exp == T(0)) return T(1);
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) return T(0);  // XLA: 0 for every base but 1 (handled above)
  }
  using W = Wide<T>;
  W result = 1, b = static_cast<W>(base);
  auto e = static_cast<std::make_unsigned_t<T>>(exp);
  while (e) {
    if (e & 1) result *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<T>(result);
}

template <typename T>
bool IntegerBinary(HloOpcode op, const Literal& a, const Literal& b, Literal& out) {
  using W = Wide<T>;
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case HloOpcode::kAdd:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) { return static_cast<T>(W(x) + W(y)); });
      return true;
    case HloOpcode::kSubtract:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) { return static_cast<T>(W(x) - W(y)); });
      return true;
    case HloOpcode::kMultiply:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) { return static_cast<T>(W(x) * W(y)); });
      return true;
    case HloOpcode::kDivide:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) -> T {
        if (y == 0) return std::is_signed_v<T> ? T(-1) : std::numeric_limits<T>::max();
        if constexpr (std::is_signed_v<T>) {
          if (y == T(-1) && x == std::numeric_limits<T>::min()) return x;
        }
        return static_cast<T>(x / y);
      });
      return true;
    case HloOpcode::kRemainder:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) -> T {
        if (y == 0) return x;
        if constexpr (std::is_signed_v<T>) {
          if (y == T(-1)) return T(0);
        }
        return static_cast<T>(x % y);
      });
      return true;
    case HloOpcode::kMaximum:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) { return x > y ? x : y; });
      return true;
    case HloOpcode::kMinimum:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) { return x < y ? x : y; });
      return true;
    case HloOpcode::kPower:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) { return IntPow<T>(x, y); });
      return true;
    case HloOpcode::kAnd:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) { return static_cast<T>(x & y); });
      return true;
    case HloOpcode::kOr:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) { return static_cast<T>(x | y); });
      return true;
    case HloOpcode::kXor:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) { return static_cast<T>(x ^ y); });
      return true;
    case HloOpcode::kShiftLeft:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) {
        return ShiftOutOfRange(y) ? T(0)
                                  : static_cast<T>(W(static_cast<U>(x)) << static_cast<U>(y));
      });
      return true;
    case HloOpcode::kShiftRightLogical:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) {
        return ShiftOutOfRange(y) ? T(0) : static_cast<T>(static_cast<U>(x) >> static_cast<U>(y));
      });
      return true;
    case HloOpcode::kShiftRightArithmetic:
      BinaryLoop<T, T, T>(a, b, out, [](T x, T y) {
        using S = std::make_signed_t<T>;
        S sx = static_cast<S>(x);
        if (ShiftOutOfRange(y)) return static_cast<T>(sx < 0 ? S(-1) : S(0));
        return static_cast<T>(sx >> static_cast<U>(y));
      });
      return true;
    default:
      return false;
  }
}

bool PredBinary(HloOpcode op, const Literal& a, const Literal& b, Literal& out) {
  switch (op) {
    case HloOpcode::kAnd:
    case HloOpcode::kMultiply:
    case HloOpcode::kMinimum:
      BinaryLoop<bool, bool, bool>(a, b, out, [](bool x, bool y) { return x && y; });
      return true;
    case HloOpcode::kOr:
    case HloOpcode::kAdd:
    case HloOpcode::kMaximum:
      BinaryLoop<bool, bool, bool>(a, b, out, [](bool x, bool y) { return x || y; });
      return true;
    case HloOpcode::kXor:
    case HloOpcode::kSubtract:
      BinaryLoop<bool, bool, bool>(a, b, out, [](bool x, bool y) { return x != y; });
      return true;
    case HloOpcode::kPower:
      BinaryLoop<bool, bool, bool>(a, b, out, [](bool x, bool y) { return x || !y; });
      return true;
    default:
      return false;
  }
}

template <typename T>
bool FloatBinary(HloOpcode op, const Literal& a, const Literal& b, Literal& out) {
  using C = Compute<T>;
#define KILN_BINARY(OPC, EXPR)                      \
  case HloOpcode::OPC:                              \
    BinaryLoop<T, T, T>(a, b, out, [](T tx, T ty) { \
      C x = static_cast<C>(tx);                     \
      C y = static_cast<C>(ty);                     \
      return static_cast<T>(EXPR);                  \
    });                                             \
    return true;
  switch (op) {
    KILN_BINARY(kAdd, x + y)
    KILN_BINARY(kSubtract, x - y)
    KILN_BINARY(kMultiply, x * y)
    KILN_BINARY(kDivide, x / y)
    KILN_BINARY(kRemainder, std::fmod(x, y))
    KILN_BINARY(kAtan2, std::atan2(x, y))
    KILN_BINARY(kPower, (x == C(1) || y == C(0)) ? C(1) : std::pow(x, y))
    // NaN-propagating, unlike std::fmax.
    KILN_BINARY(kMaximum, std::isnan(x) ? x : (std::isnan(y) ? y : (x > y ? x : y)))
    KILN_BINARY(kMinimum, std::isnan(x) ? x : (std::isnan(y) ? y : (x < y ? x : y)))
    default:
      return false;
  }
}

template <typename T>
T ComplexPow(T x, T y) {
  using P = typename T::value_type;
  if (x == T(1) || y == T(0)) return T(1);
  // inf^(a+0i) is inf for a > 0 and 0 for a < 0 (XLA's special case).
  if (x.imag() == 0 && x.real() > 0 && std::isinf(x.real()) && y.imag() == 0) {
    if (y.real() > 0) return x;
    if (y.real() < 0) return T(0);
  }
  if (x == T(0) && y.imag() == P(0) && y.real() > 0) return T(0);
  return std::pow(x, y);
}

template <typename T>
bool ComplexBinary(HloOpcode op, const Literal& a, const Literal& b, Literal& out) {
  using C = T;
  switch (op) {
    KILN_BINARY(kAdd, x + y)
    KILN_BINARY(kSubtract, x - y)
    KILN_BINARY(kMultiply, x * y)
    KILN_BINARY(kDivide, x / y)
    KILN_BINARY(kPower, ComplexPow(x, y))
    // atan2(y, x) = -i * log((x + i*y) / sqrt(x^2 + y^2))
    KILN_BINARY(kAtan2, (T(0, -1) * std::log((y + T(0, 1) * x) / std::sqrt(y * y + x * x))))
    default:
      return false;
  }
}
#undef KILN_BINARY

// --- compare. -----------------------------------------------------------------------------

template <typename T>
bool ApplyDirection(ComparisonDirection d, T x, T y) {
  switch (d) {
    case ComparisonDirection::kEq:
      return x == y;
    case ComparisonDirection::kNe:
      return x != y;
    case ComparisonDirection::kGe:
      return x >= y;
    case ComparisonDirection::kGt:
      return x > y;
    case ComparisonDirection::kLe:
      return x <= y;
    case ComparisonDirection::kLt:
      return x < y;
  }
  return false;
}

template <typename T>
auto TotalOrderBits(T v) {
  if constexpr (IsMiniFloatT<T>::value) {
    // One-byte floats are ordered by their float value, as cpu-llvm computes them widened
    // (their NaNs decode to one +NaN); their own bits have no common sign position.
    return TotalOrderBits(static_cast<float>(v));
  } else if constexpr (kIsNarrowFloatT<T>) {
    return TotalOrderKeyOfBits(static_cast<int16_t>(v.bits));
  } else if constexpr (std::is_same_v<T, float>) {
    int32_t s;
    std::memcpy(&s, &v, 4);
    return TotalOrderKeyOfBits(s);
  } else {
    int64_t s;
    std::memcpy(&s, &v, 8);
    return TotalOrderKeyOfBits(s);
  }
}

template <typename T>
void CompareLoop(ComparisonDirection d, const Literal& a, const Literal& b, Literal& out,
                 bool total_order) {
  // Dispatch the direction outside the loop so each loop body is a single comparison.
  auto run = [&](auto cmp) { BinaryLoop<T, T, bool>(a, b, out, cmp); };
  if constexpr (kIsFloatT<T>) {
    if (total_order) {
      run([d](T x, T y) { return ApplyDirection(d, TotalOrderBits(x), TotalOrderBits(y)); });
      return;
    }
  }
  using C = Compute<T>;
  switch (d) {
    case ComparisonDirection::kEq:
      run([](T x, T y) { return C(x) == C(y); });
      return;
    case ComparisonDirection::kNe:
      run([](T x, T y) { return C(x) != C(y); });
      return;
    case ComparisonDirection::kGe:
      run([](T x, T y) { return C(x) >= C(y); });
      return;
    case ComparisonDirection::kGt:
      run([](T x, T y) { return C(x) > C(y); });
      return;
    case ComparisonDirection::kLe:
      run([](T x, T y) { return C(x) <= C(y); });
      return;
    case ComparisonDirection::kLt:
      run([](T x, T y) { return C(x) < C(y); });
      return;
  }
}

absl::StatusOr<Literal> EvalCompare(const HloInstruction& instr, const Literal& a,
                                    const Literal& b) {
  if (!instr.attrs().comparison_direction) {
    return InvalidArgument(instr, "compare has no comparison direction");
  }
  const ComparisonDirection d = *instr.attrs().comparison_direction;
  const PrimitiveType t = a.shape().element_type();
  if (IsComplex(t) && d != ComparisonDirection::kEq && d != ComparisonDirection::kNe) {
    return InvalidArgument(instr, "complex values can only be compared with EQ or NE");
  }
  Literal out(instr.shape());
  const bool total = instr.attrs().comparison_type == ComparisonType::kFloatTotalOrder;
  PrimitiveTypeSwitch(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (IsComplexT<T>::value) {
      bool want_equal = d == ComparisonDirection::kEq;
      BinaryLoop<T, T, bool>(a, b, out, [want_equal](T x, T y) { return (x == y) == want_equal; });
    } else {
      CompareLoop<T>(d, a, b, out, total);
    }
  });
  return out;
}

// --- complex, stochastic-convert. ---------------------------------------------------------

absl::StatusOr<Literal> EvalComplex(const HloInstruction& instr, const Literal& a,
                                    const Literal& b) {
  Literal out(instr.shape());
  switch (a.shape().element_type()) {
    case PrimitiveType::F32:
      BinaryLoop<float, float, std::complex<float>>(
          a, b, out, [](float x, float y) { return std::complex<float>(x, y); });
      return out;
    case PrimitiveType::F64:
      BinaryLoop<double, double, std::complex<double>>(
          a, b, out, [](double x, double y) { return std::complex<double>(x, y); });
      return out;
    default:
      return TypeError(instr, a.shape().element_type());
  }
}

// Rounds |x| up with probability equal to its fractional part, using the random bits as a
// fixed-point fraction in [0, 1); saturates and maps NaN to 0 like convert.
template <typename F, typename R, typename To>
To StochasticRound(F value, R random) {
  using C = Compute<F>;
  C x = static_cast<C>(value);
  if (std::isnan(x)) return To(0);
  if (x <= static_cast<C>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
  if (x >= static_cast<C>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
  bool negative = std::signbit(x);
  C mag = std::fabs(x);
  C truncated = std::trunc(mag);
  C fraction = mag - truncated;
  if (fraction != C(0)) {
    // The fraction as an unsigned fixed-point number (2^-1 in the top bit); round the
    // magnitude up when the random bits are below it. The product is exact (power-of-two
    // scale of an exact fraction); the conversion to the random type truncates.
    double fixed = std::floor(std::ldexp(static_cast<double>(fraction), sizeof(R) * 8));
    if (static_cast<double>(random) < fixed) truncated += C(1);
  }
  C r = negative ? -truncated : truncated;
  if (r <= static_cast<C>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
  if (r >= static_cast<C>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
  return static_cast<To>(r);
}

absl::StatusOr<Literal> EvalStochasticConvert(const HloInstruction& instr, const Literal& a,
                                              const Literal& b) {
  const PrimitiveType ft = a.shape().element_type(), rt = b.shape().element_type();
  const PrimitiveType tt = instr.shape().element_type();
  if (!IsFloating(ft) || !IsUnsignedInt(rt) || ByteSizeOf(ft) != ByteSizeOf(rt) ||
      !IsSignedInt(tt)) {
    return InvalidArgument(instr,
                           "stochastic-convert needs a float operand, unsigned random "
                           "bits of the same width and a signed integer result");
  }
  Literal out(instr.shape());
  PrimitiveTypeSwitch(ft, [&](auto ftag) {
    using F = decltype(ftag);
    PrimitiveTypeSwitch(rt, [&](auto rtag) {
      using R = decltype(rtag);
      PrimitiveTypeSwitch(tt, [&](auto ttag) {
        using To = decltype(ttag);
        if constexpr (kIsFloatT<F> && std::is_unsigned_v<R> && !std::is_same_v<R, bool> &&
                      kIsInt<To> && std::is_signed_v<To>) {
          BinaryLoop<F, R, To>(a, b, out, [](F x, R r) { return StochasticRound<F, R, To>(x, r); });
        }
      });
    });
  });
  return out;
}

absl::StatusOr<Literal> EvalBinary(const HloInstruction& instr, const Literal& a,
                                   const Literal& b) {
  const HloOpcode op = instr.opcode();
  if (op == HloOpcode::kCompare) return EvalCompare(instr, a, b);
  if (op == HloOpcode::kComplex) return EvalComplex(instr, a, b);
  if (op == HloOpcode::kStochasticConvert) return EvalStochasticConvert(instr, a, b);
  const PrimitiveType t = a.shape().element_type();
  if (b.shape().element_type() != t || instr.shape().element_type() != t) {
    return InvalidArgument(
        instr, absl::StrCat("'", OpName(instr), "' needs equal element types, got ",
                            a.shape().ToString(false), ", ", b.shape().ToString(false), " -> ",
                            instr.shape().ToString(false)));
  }
  Literal out(instr.shape());
  bool handled = false;
  PrimitiveTypeSwitch(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      handled = PredBinary(op, a, b, out);
    } else if constexpr (std::is_integral_v<T>) {
      handled = IntegerBinary<T>(op, a, b, out);
    } else if constexpr (IsComplexT<T>::value) {
      handled = ComplexBinary<T>(op, a, b, out);
    } else {
      handled = FloatBinary<T>(op, a, b, out);
    }
  });
  if (!handled) return TypeError(instr, t);
  return out;
}

// --- select, clamp. -----------------------------------------------------------------------

template <typename E>
void SelectLoop(const Literal& pred, const Literal& t, const Literal& f, Literal& out) {
  auto p = pred.data<bool>();
  auto x = t.data<E>();
  auto y = f.data<E>();
  auto d = out.data<E>();
  const size_t n = d.size();
  const bool xs = x.size() != n, ys = y.size() != n;
  if (p.size() != n) {
    // Scalar predicate: the whole of one operand.
    auto src = p[0] ? x : y;
    for (size_t i = 0; i < n; ++i) d[i] = src[src.size() == n ? i : 0];
    return;
  }
  if (!xs && !ys) {
    for (size_t i = 0; i < n; ++i) d[i] = p[i] ? x[i] : y[i];
  } else {
    for (size_t i = 0; i < n; ++i) d[i] = p[i] ? x[xs ? 0 : i] : y[ys ? 0 : i];
  }
}

struct Bytes16 {
  uint8_t b[16];
};

absl::StatusOr<Literal> EvalSelect(const HloInstruction& instr, Operands ops) {
  const Literal& pred = *ops[0];
  if (pred.shape().element_type() != PrimitiveType::PRED) {
    return InvalidArgument(instr,
                           "select predicate must be pred, got " + pred.shape().ToString(false));
  }
  Literal out(instr.shape());
  const int64_t n = out.element_count();
  for (int i = 0; i < 3; ++i) {
    if (ops[i]->element_count() != n && ops[i]->element_count() != 1) {
      return InvalidArgument(
          instr, absl::StrCat("select operand ", i, " has shape ", ops[i]->shape().ToString(false),
                              ", which does not match the result ", instr.shape().ToString(false)));
    }
  }
  if (ops[1]->shape().element_type() != out.shape().element_type() ||
      ops[2]->shape().element_type() != out.shape().element_type()) {
    return InvalidArgument(instr, "select branches must have the result's element type");
  }
  switch (ByteSizeOf(out.shape().element_type())) {
    case 1:
      SelectLoop<uint8_t>(pred, *ops[1], *ops[2], out);
      break;
    case 2:
      SelectLoop<uint16_t>(pred, *ops[1], *ops[2], out);
      break;
    case 4:
      SelectLoop<uint32_t>(pred, *ops[1], *ops[2], out);
      break;
    case 8:
      SelectLoop<uint64_t>(pred, *ops[1], *ops[2], out);
      break;
    case 16:
      SelectLoop<Bytes16>(pred, *ops[1], *ops[2], out);
      break;
    default:
      return TypeError(instr, out.shape().element_type());
  }
  return out;
}

absl::StatusOr<Literal> EvalClamp(const HloInstruction& instr, Operands ops) {
  Literal out(instr.shape());
  const int64_t n = out.element_count();
  const PrimitiveType t = out.shape().element_type();
  for (int i = 0; i < 3; ++i) {
    if ((ops[i]->element_count() != n && ops[i]->element_count() != 1) ||
        ops[i]->shape().element_type() != t) {
      return InvalidArgument(
          instr, absl::StrCat("clamp operand ", i, " has shape ", ops[i]->shape().ToString(false),
                              ", which does not match the result ", instr.shape().ToString(false)));
    }
  }
  if (IsComplex(t)) return TypeError(instr, t);
  PrimitiveTypeSwitch(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!IsComplexT<T>::value) {
      using C = Compute<T>;
      auto lo = ops[0]->data<T>();
      auto x = ops[1]->data<T>();
      auto hi = ops[2]->data<T>();
      auto d = out.data<T>();
      const bool lo_s = lo.size() != static_cast<size_t>(n);
      const bool x_s = x.size() != static_cast<size_t>(n);
      const bool hi_s = hi.size() != static_cast<size_t>(n);
      for (int64_t i = 0; i < n; ++i) {
        C l = static_cast<C>(lo[lo_s ? 0 : i]);
        C v = static_cast<C>(x[x_s ? 0 : i]);
        C h = static_cast<C>(hi[hi_s ? 0 : i]);
        C r;
        if constexpr (std::is_floating_point_v<C>) {
          if (std::isnan(l))
            r = l;
          else if (std::isnan(v))
            r = v;
          else if (std::isnan(h))
            r = h;
          else
            r = std::min(h, std::max(v, l));
        } else {
          r = std::min(h, std::max(v, l));
        }
        d[i] = static_cast<T>(r);
      }
    }
  });
  return out;
}

}  // namespace

// Bit operations whose answer depends on the width: on sub-byte integers they see only the
// low bits (the evaluator hands them sign-extended bytes).
std::optional<Literal> SubByteBitOp(const HloInstruction& instr, Operands ops) {
  const PrimitiveType t = instr.shape().element_type();
  const HloOpcode op = instr.opcode();
  if (!IsSubByteInt(t) || (op != HloOpcode::kPopulationCount && op != HloOpcode::kClz &&
                           op != HloOpcode::kShiftRightLogical)) {
    return std::nullopt;
  }
  const int bits = BitWidth(t);
  const uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
  Literal out(instr.shape());
  auto x = ops[0]->data<uint8_t>();
  auto d = out.data<uint8_t>();
  for (size_t i = 0; i < d.size(); ++i) {
    const uint8_t v = x[ops[0]->element_count() == 1 ? 0 : i] & mask;
    if (op == HloOpcode::kPopulationCount) {
      d[i] = static_cast<uint8_t>(std::popcount(v));
    } else if (op == HloOpcode::kClz) {
      d[i] = static_cast<uint8_t>(std::countl_zero(v) - (8 - bits));
    } else {
      const int64_t amount = ops[1]->GetAsInt64(ops[1]->element_count() == 1 ? 0 : i);
      d[i] = amount < 0 || amount >= bits ? 0 : static_cast<uint8_t>(v >> amount);
    }
  }
  return out;
}

absl::StatusOr<Literal> EvalElementwise(const HloInstruction& instr, Operands ops) {
  const HloOpcode op = instr.opcode();
  if (!instr.shape().IsArray()) {
    return InvalidArgument(instr, "elementwise '" + OpName(instr) + "' must produce an array");
  }
  if (std::optional<Literal> bit_op = SubByteBitOp(instr, ops)) return *std::move(bit_op);
  if (op == HloOpcode::kSelect || op == HloOpcode::kClamp) {
    if (auto s = CheckArrayOperands(instr, ops, 3); !s.ok()) return s;
    return op == HloOpcode::kSelect ? EvalSelect(instr, ops) : EvalClamp(instr, ops);
  }
  const int64_t n = instr.shape().num_elements();
  if (IsElementwiseUnary(op)) {
    if (auto s = CheckArrayOperands(instr, ops, 1); !s.ok()) return s;
    if (op != HloOpcode::kBitcastConvert && ops[0]->element_count() != n) {
      return InvalidArgument(
          instr, absl::StrCat("operand shape ", ops[0]->shape().ToString(false),
                              " does not match result shape ", instr.shape().ToString(false)));
    }
    return EvalUnary(instr, *ops[0]);
  }
  if (IsElementwiseBinary(op)) {
    if (auto s = CheckArrayOperands(instr, ops, 2); !s.ok()) return s;
    for (int i = 0; i < 2; ++i) {
      if (ops[i]->element_count() != n && ops[i]->element_count() != 1) {
        return InvalidArgument(
            instr, absl::StrCat("operand ", i, " shape ", ops[i]->shape().ToString(false),
                                " does not match result shape ", instr.shape().ToString(false)));
      }
    }
    return EvalBinary(instr, *ops[0], *ops[1]);
  }
  return Unimplemented(instr, "'" + OpName(instr) + "' is not an elementwise opcode");
}

}  // namespace kiln::eval
