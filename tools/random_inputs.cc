// splitmix64-based generation of reproducible test inputs.
#include "tools/random_inputs.h"

#include <cmath>
#include <complex>
#include <new>

#include "fmt/format.h"

namespace kiln {
namespace {

struct SplitMix64 {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1) on a grid of 2^-52 (exact in double).
  double Signed() { return static_cast<double>(Next() >> 11) * 0x1.0p-52 - 1.0; }
  // Uniform in [-1, 1) on a grid of 2^-23 (exact in float, so never rounds up to 1).
  float SignedFloat() { return static_cast<float>(Next() >> 40) * 0x1.0p-23f - 1.0f; }
};

}  // namespace

Literal MakeRandomLiteral(const Shape& shape, uint64_t seed) {
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (int i = 0; i < shape.tuple_size(); ++i) {
      elements.push_back(MakeRandomLiteral(shape.tuple_shapes(i), seed * 31 + i + 1));
    }
    return Literal::MakeTuple(std::move(elements));
  }
  Literal literal(shape);
  if (!shape.IsArray()) return literal;
  SplitMix64 rng{seed};
  PrimitiveType t = shape.element_type();
  const int64_t n = shape.num_elements();
  PrimitiveTypeSwitch(t, [&](auto zero) {
    using T = decltype(zero);
    auto data = literal.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        data[i] = (rng.Next() >> 63) != 0;
      } else if constexpr (IsComplexT<T>::value) {
        using R = typename T::value_type;
        R re = static_cast<R>(rng.SignedFloat());
        R im = static_cast<R>(rng.SignedFloat());
        data[i] = T(re, im);
      } else if constexpr (std::is_same_v<T, double>) {
        data[i] = rng.Signed();
      } else if constexpr (std::is_same_v<T, f8e8m0fnu>) {
        data[i] = T(std::fabs(rng.SignedFloat()) * 4.0f + 0.25f);  // no sign, no zero
      } else if constexpr (kIsFloatT<T>) {
        data[i] = T(rng.SignedFloat());  // f16/bf16 round to nearest even from here
      } else if constexpr (std::is_signed_v<T>) {
        data[i] = static_cast<T>(static_cast<int64_t>(rng.Next() % 8) - 4);
      } else {
        data[i] = static_cast<T>(rng.Next() % 8);
      }
    }
  });
  literal.TruncateSubByteInts();  // s4/s2 keep their low bits (s2 wraps -4..3)
  return literal;
}

absl::StatusOr<Literal> GeneratedInput(const Shape& shape, int index, const std::string& what) {
  constexpr uint64_t kInputSeed = 0x6b696c6e;  // "kiln"
  try {
    return MakeRandomLiteral(shape, kInputSeed + index);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        fmt::format("cannot allocate {} bytes for a generated input to {} ({})", shape.byte_size(),
                    what, shape.ToString(false)));
  }
}

}  // namespace kiln
