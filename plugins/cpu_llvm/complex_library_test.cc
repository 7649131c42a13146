// The magnitude of complex arrays on cpu-llvm's library path (complex_library.h) against the
// HLO evaluator (std::abs): c64 and c128, random values on 1 and 2 threads, infinities, NaN,
// values whose squares overflow or underflow the element type, an abs fused with the fft
// before it and the add after; and what stays elsewhere.
#include "plugins/cpu_llvm/complex_library.h"

#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

// Runs `text` (one parameter) on `arg` through cpu-llvm and the evaluator and compares them
// within `ulps` relative units of the result type (NaN matching NaN); returns whether a step
// of the plan was a library call.
bool Compare(const std::string& text, const Literal& arg, int threads, double ulps) {
  CompileOptions opts;
  opts.threads = threads;
  const testing::CompiledText c = testing::CompileText(text, opts);
  if (c.exe == nullptr) return false;
  bool library = false;
  for (const Step& s : c.exe->plan().steps) library |= s.kind == Disposition::kLibrary;
  std::vector<Literal> args;
  args.push_back(Literal(arg));
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*c.module, args);
  EXPECT_TRUE(want.ok()) << want.status();
  auto got = c.exe->Run(args);
  EXPECT_TRUE(got.ok()) << got.status();
  if (!want.ok() || !got.ok()) return library;
  const double eps = got->shape().element_type() == PrimitiveType::F32
                         ? std::numeric_limits<float>::epsilon()
                         : std::numeric_limits<double>::epsilon();
  int bad = 0;
  for (int64_t i = 0; i < want->element_count() && bad < 5; ++i) {
    const double g = got->GetAsDouble(i), w = want->GetAsDouble(i);
    if (std::isnan(w) ? !std::isnan(g) : !(g == w || std::abs(g - w) <= ulps * eps * std::abs(w))) {
      ADD_FAILURE() << "element " << i << ": " << g << " vs " << w;
      ++bad;
    }
  }
  return library;
}

template <typename R>
Literal Complexes(PrimitiveType type, const std::vector<std::complex<R>>& v) {
  Literal l = Literal::Uninitialized(Shape(type, {static_cast<int64_t>(v.size())}));
  auto d = l.data<std::complex<R>>();
  for (size_t i = 0; i < v.size(); ++i) d[i] = v[i];
  return l;
}

template <typename R>
std::vector<std::complex<R>> RandomAndSpecial(int64_t n) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<R> d(-4, 4);
  std::vector<std::complex<R>> v;
  for (int64_t i = 0; i < n; ++i) v.emplace_back(d(rng), d(rng));
  const R inf = std::numeric_limits<R>::infinity(), nan = std::numeric_limits<R>::quiet_NaN();
  // Squares that overflow or underflow the type (normal values: cpu-llvm's threads flush
  // denormals, as XLA:CPU's do).
  const R big = std::numeric_limits<R>::max() / 2, tiny = std::numeric_limits<R>::min() * 8;
  v[1] = {inf, 1};
  v[2] = {2, -inf};
  v[3] = {nan, 1};
  v[4] = {inf, nan};  // hypot: infinity wins over NaN
  v[5] = {big, big};
  v[6] = {tiny, -tiny};
  v[7] = {0, -0.0};
  v[8] = {-3, 4};
  return v;
}

TEST(ComplexLibrary, AbsMatchesTheEvaluator) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    for (int64_t n : {9, 100000}) {
      EXPECT_TRUE(Compare(fmt::format("HloModule a\nENTRY main {{\n  x = c64[{0}] parameter(0)\n"
                                      "  ROOT a = f32[{0}] abs(x)\n}}\n",
                                      n),
                          Complexes(PrimitiveType::C64, RandomAndSpecial<float>(n)), threads, 1));
      EXPECT_TRUE(Compare(fmt::format("HloModule a\nENTRY main {{\n  x = c128[{0}] parameter(0)\n"
                                      "  ROOT a = f64[{0}] abs(x)\n}}\n",
                                      n),
                          Complexes(PrimitiveType::C128, RandomAndSpecial<double>(n)), threads, 1));
    }
  }
}

TEST(ComplexLibrary, AfterAnFftAndBeforeAKernel) {
  // |rfft(x)| + 1, as jnp.abs(jnp.fft.rfft(x)) + 1 lowers.
  std::mt19937 rng(5);
  std::normal_distribution<double> d;
  std::vector<double> x(64 * 256);
  for (double& v : x) v = d(rng);
  EXPECT_TRUE(Compare(
      "HloModule a\nENTRY main {\n  x = f32[64,256] parameter(0)\n"
      "  f = c64[64,129] fft(x), fft_type=RFFT, fft_length={256}\n"
      "  a = f32[64,129] abs(f)\n  one = f32[] constant(1)\n"
      "  b = f32[64,129] broadcast(one), dimensions={}\n  ROOT r = f32[64,129] add(a, b)\n}\n",
      Literal::FromDoubles(Shape(PrimitiveType::F32, {64, 256}), x), 2, 64));
}

TEST(ComplexLibrary, OnlyComplexMagnitudes) {
  auto abs = [](const std::string& in, const std::string& out) {
    auto m = ParseHloModule(
        fmt::format("HloModule a\nENTRY main {{\n  x = {} parameter(0)\n  ROOT a = {} abs(x)\n}}\n",
                    in, out),
        "a");
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() && IsComplexLibraryCall(*(*m)->entry()->root());
  };
  EXPECT_TRUE(abs("c64[3]", "f32[3]"));
  EXPECT_TRUE(abs("c128[2,2]", "f64[2,2]"));
  EXPECT_FALSE(abs("f32[3]", "f32[3]"));  // a real abs is a kernel's
  EXPECT_FALSE(abs("s32[3]", "s32[3]"));
}

}  // namespace
}  // namespace kiln::cpu
