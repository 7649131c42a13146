// f64 math in vectorized loops: the functions glibc's libmvec has (tanh, erf, expm1, log1p,
// cbrt, tan, atan2, and exp, log, sin, cos at AVX-512's 8 lanes) are called on whole vectors,
// not once per element through libm, and their values stay within a few ulp of libm's.
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

struct MathCase {
  std::string op;  // the HLO opcode
  std::function<double(double, double)> ref;
  double lo, hi;  // the inputs' range
  bool binary = false;
};

TEST(F64VectorMath, LibmvecFunctionsRunOnVectors) {
  const std::vector<MathCase> cases = {
      {"tanh", [](double x, double) { return std::tanh(x); }, -20, 20},
      {"erf", [](double x, double) { return std::erf(x); }, -6, 6},
      {"exponential-minus-one", [](double x, double) { return std::expm1(x); }, -30, 30},
      {"log-plus-one", [](double x, double) { return std::log1p(x); }, -0.9, 100},
      {"cbrt", [](double x, double) { return std::cbrt(x); }, -1000, 1000},
      {"tan", [](double x, double) { return std::tan(x); }, -1.5, 1.5},
      {"exponential", [](double x, double) { return std::exp(x); }, -700, 700},
      {"log", [](double x, double) { return std::log(x); }, 1e-300, 1e300},
      {"sine", [](double x, double) { return std::sin(x); }, -100, 100},
      {"cosine", [](double x, double) { return std::cos(x); }, -100, 100},
      {"atan2", [](double y, double x) { return std::atan2(y, x); }, -10, 10, true},
  };
  constexpr int64_t kN = 4099;  // a vector remainder too
  for (const MathCase& c : cases) {
    SCOPED_TRACE(c.op);
    const std::string text =
        c.binary ? fmt::format(
                       "HloModule m\nENTRY main {{\n  x = f64[{0}] parameter(0)\n  y = f64[{0}] "
                       "parameter(1)\n  ROOT r = f64[{0}] {1}(x, y)\n}}\n",
                       kN, c.op)
                 : fmt::format(
                       "HloModule m\nENTRY main {{\n  x = f64[{0}] parameter(0)\n  ROOT r = "
                       "f64[{0}] {1}(x)\n}}\n",
                       kN, c.op);
    CompileOptions opts;
    opts.keep_ir = true;
    const testing::CompiledText p = testing::CompileText(text, opts);
    ASSERT_NE(p.exe, nullptr);
    // A call of a vector variant (_ZGVdN4v_tanh, _ZGVeN8v_tanh, ...), whichever width the
    // host's vectorizer chose.
    const std::string ir = p.exe->llvm_ir();
    EXPECT_NE(ir.find("@_ZGV"), std::string::npos) << "no vector math call in\n" << ir;
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> d(c.lo, c.hi);
    std::vector<Literal> args;
    for (int a = 0; a < (c.binary ? 2 : 1); ++a) {
      Literal l(Shape(PrimitiveType::F64, {kN}));
      for (double& v : l.data<double>()) v = d(rng);
      if (c.op == "log")  // spread over the exponent range, not just near 1e300
        for (double& v : l.data<double>())
          v = std::exp(std::uniform_real_distribution<>(-690, 690)(rng));
      args.push_back(std::move(l));
    }
    auto got = p.exe->Run(args);
    ASSERT_TRUE(got.ok()) << got.status();
    int bad = 0;
    for (int64_t i = 0; i < kN && bad < 5; ++i) {
      const double x = args[0].data<double>()[i];
      const double y = c.binary ? args[1].data<double>()[i] : 0;
      const double want = c.ref(x, y), g = got->data<double>()[i];
      // libmvec's bound is 4 ulp; 5 ulp of the larger of the value and the smallest normal.
      const double tol = 5 * std::numeric_limits<double>::epsilon() *
                         std::max(std::fabs(want), std::numeric_limits<double>::min());
      if (!(std::fabs(g - want) <= tol)) {
        ADD_FAILURE() << c.op << "(" << x << (c.binary ? fmt::format(", {}", y) : "") << ") = " << g
                      << ", libm " << want;
        ++bad;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::cpu
