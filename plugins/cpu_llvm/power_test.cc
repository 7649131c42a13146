// power(x, y) on cpu-llvm against C's pow (computed in the test) for every pair of special
// bases (negative and positive, ±0, ±1, ±inf, NaN) and exponents (even, odd and negative
// integers, non-integers, ±0, ±inf, NaN, an odd integer near 2^23): the emitter computes
// pow(|x|, y) and puts C's sign and NaN rules back, so that glibc's vector powf keeps its
// fast path (EmitPow). f32 and f64; classes (NaN, infinities, zeros, signs) exact, values
// within a few ulps (the vector library's powf).
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

template <typename T>
void CheckPowers(const char* type) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T> bases = {-2.5, -2, -1, -0.5, T(-0.0), 0, 0.5, 1, 3, -inf, inf, nan, -1e-3};
  const std::vector<T> exps = {0,   T(-0.0), 1,   2,    3,   7,   -1,         -2,  -3,
                               0.5, -0.5,    2.5, -inf, inf, nan, T(8388609), 1e4, -1e4};
  std::vector<double> x, y;
  for (T b : bases)
    for (T e : exps) x.push_back(b), y.push_back(e);
  const int64_t n = static_cast<int64_t>(x.size());
  const std::string shape = std::string(type) + "[" + std::to_string(n) + "]";
  auto c = testing::CompileText("HloModule pow\nENTRY main {\n  x = " + shape +
                                " parameter(0)\n  y = " + shape +
                                " parameter(1)\n  ROOT p = " + shape + " power(x, y)\n}\n");
  ASSERT_NE(c.exe, nullptr);
  const PrimitiveType pt = std::string(type) == "f32" ? PrimitiveType::F32 : PrimitiveType::F64;
  Literal lx = Literal::FromDoubles(Shape(pt, {n}), x),
          ly = Literal::FromDoubles(Shape(pt, {n}), y);
  const std::vector<const Literal*> args = {&lx, &ly};
  auto got = c.exe->Run(std::span<const Literal* const>(args));
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t i = 0; i < n; ++i) {
    const T want = std::pow(static_cast<T>(x[i]), static_cast<T>(y[i]));
    const T g = static_cast<T>(got->GetAsDouble(i));
    SCOPED_TRACE(::testing::Message() << "pow(" << x[i] << ", " << y[i] << ")");
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(g)) << g;
    } else if (std::isinf(want) || want == 0) {
      EXPECT_EQ(g, want);
      EXPECT_EQ(std::signbit(g), std::signbit(want)) << g;
    } else {
      EXPECT_EQ(std::signbit(g), std::signbit(want)) << g << " vs " << want;
      EXPECT_NEAR(g, want, std::fabs(want) * 8 * std::numeric_limits<T>::epsilon());
    }
  }
}

TEST(CpuLlvmPower, F32SpecialBasesAndExponents) { CheckPowers<float>("f32"); }
TEST(CpuLlvmPower, F64SpecialBasesAndExponents) { CheckPowers<double>("f64"); }

}  // namespace
}  // namespace kiln::cpu
