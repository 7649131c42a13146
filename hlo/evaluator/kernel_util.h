// Small helpers shared by the eval2 kernels (linalg, reduction, indexing, batch-norm,
// random): index odometers, accumulation types, scalar extraction, error messages.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "hlo/native_type.h"

namespace kiln::eval {

// Advances `idx` over `dims` in row-major order; false once every index was visited.
inline bool NextIndex(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

inline int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Type in which sums of products are accumulated: 16- and 8-bit floats widen to float (as XLA's
// CPU backend does), bool to int, everything else stays itself.
template <typename T>
struct AccumOf {
  using type = T;
};
template <>
struct AccumOf<half> {
  using type = float;
};
template <>
struct AccumOf<bfloat16> {
  using type = float;
};
template <PrimitiveType P>
struct AccumOf<minifloat<P>> {
  using type = float;
};
template <>
struct AccumOf<bool> {
  using type = int32_t;
};
template <typename T>
using AccumT = typename AccumOf<T>::type;

// What the reference accumulates reductions in (reduce and reduce-window with a recognized
// combiner): f64 for f32, so that a long f32 sum is rounded once and any device's summation
// order is judged against that rather than against another order's f32 rounding; AccumT
// otherwise. Dots keep AccumT (f32), as XLA's evaluator does; the cross-device tests judge
// long f32 dot chains against an f64 version of the module instead.
template <typename T>
struct SumOf {
  using type = AccumT<T>;
};
template <>
struct SumOf<float> {
  using type = double;
};
template <typename T>
using SumT = typename SumOf<T>::type;

// Converts between element types through the accumulation type (no double rounding for
// half/bfloat16, which only convert from float).
template <typename To, typename From>
inline To CastTo(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (IsComplexT<To>::value) {
    if constexpr (IsComplexT<From>::value) {
      return To(static_cast<typename To::value_type>(v.real()),
                static_cast<typename To::value_type>(v.imag()));
    } else {
      return To(static_cast<typename To::value_type>(static_cast<AccumT<From>>(v)), 0);
    }
  } else if constexpr (IsComplexT<From>::value) {
    return CastTo<To>(v.real());
  } else if constexpr (kIsNarrowFloatT<To>) {
    return To(static_cast<float>(static_cast<AccumT<From>>(v)));
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<AccumT<From>>(v) != AccumT<From>(0);
  } else {
    return static_cast<To>(static_cast<AccumT<From>>(v));
  }
}

// A scalar literal holding element `linear` of array `arr`.
inline Literal ScalarAt(const Literal& arr, int64_t linear) {
  Literal s(Shape::Scalar(arr.shape().element_type()));
  int64_t size = ByteSizeOf(arr.shape().element_type());
  std::memcpy(s.untyped_data(), arr.untyped_data() + linear * size, size);
  return s;
}
// Copies the scalar `s` into element `linear` of `arr` (same element type).
inline void StoreScalar(Literal& arr, int64_t linear, const Literal& s) {
  int64_t size = ByteSizeOf(arr.shape().element_type());
  std::memcpy(arr.untyped_data() + linear * size, s.untyped_data(), size);
}

// Sets every element of `arr` to the scalar `s` (same element type): one element copied,
// then the filled prefix doubled, instead of a per-element store.
inline void FillWithScalar(Literal& arr, const Literal& s) {
  const int64_t size = ByteSizeOf(arr.shape().element_type());
  const int64_t bytes = arr.element_count() * size;
  if (bytes == 0) return;
  uint8_t* dst = arr.untyped_data();
  std::memcpy(dst, s.untyped_data(), size);
  for (int64_t done = size; done < bytes; done *= 2)
    std::memcpy(dst + done, dst, std::min(done, bytes - done));
}

// "evaluator: <opcode> <name>: <msg>" as an InvalidArgument status.
inline absl::Status EvalError(const HloInstruction& instr, const std::string& msg) {
  return absl::InvalidArgumentError("evaluator: " + std::string(HloOpcodeString(instr.opcode())) +
                                    " '" + instr.name() + "': " + msg);
}

// Operand count check shared by every kernel.
inline absl::Status ExpectOperands(const HloInstruction& instr, Operands ops, size_t n) {
  if (ops.size() != n)
    return EvalError(
        instr, "expected " + std::to_string(n) + " operands, got " + std::to_string(ops.size()));
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i] == nullptr || !ops[i]->shape().IsArray())
      return EvalError(instr, "operand " + std::to_string(i) + " is not an array");
  return absl::OkStatus();
}

}  // namespace kiln::eval
