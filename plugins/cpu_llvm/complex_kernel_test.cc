// Complex arithmetic in cpu-llvm's generated kernels (plugins/llvm_emitter/complex_emitter.cc)
// against the HLO evaluator (std::complex): c64 and c128, random values on 1 and 2 threads;
// magnitudes of infinities, NaN and values whose squares overflow or underflow; every op the
// emitter has, fused in chains with data movement and constants; an abs after an FFT; and
// that the ops it lacks, and a planner without complex kernels (gpu-nvptx's), leave them
// to the evaluator.
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

// |got - want| within `ulps` units of the part type's epsilon times (|want| + 1); NaN parts
// match NaN parts.
template <typename R>
bool Close(std::complex<R> got, std::complex<R> want, double ulps) {
  const double eps = std::numeric_limits<R>::epsilon();
  auto part = [&](double g, double w) {
    if (std::isnan(w)) return std::isnan(g);
    return g == w || std::abs(g - w) <= ulps * eps * (std::abs(std::complex<double>(want)) + 1);
  };
  return part(got.real(), want.real()) && part(got.imag(), want.imag());
}

template <typename R>
int CompareArrays(const Literal& got, const Literal& want, double ulps) {
  int bad = 0;
  if (IsComplex(want.shape().element_type())) {
    auto g = got.data<std::complex<R>>();
    auto w = want.data<std::complex<R>>();
    for (size_t i = 0; i < w.size() && bad < 5; ++i)
      if (!Close(g[i], w[i], ulps)) {
        ADD_FAILURE() << "element " << i << ": " << g[i] << " vs " << w[i];
        ++bad;
      }
    return bad;
  }
  for (int64_t i = 0; i < want.element_count() && bad < 5; ++i) {
    const double g = got.GetAsDouble(i), w = want.GetAsDouble(i);
    if (!Close(std::complex<R>(g), std::complex<R>(w), ulps)) {
      ADD_FAILURE() << "element " << i << ": " << g << " vs " << w;
      ++bad;
    }
  }
  return bad;
}

struct Outcome {
  bool evaluator = false;  // some step of the plan ran on the evaluator
  int mismatches = 0;
};

// Runs `text` on `args` through cpu-llvm (with `plan`) and the evaluator and compares every
// output array.
Outcome Compare(const std::string& text, const std::vector<Literal>& args, int threads, double ulps,
                const PlanOptions& plan = CpuPlanOptions()) {
  CompileOptions opts;
  opts.threads = threads;
  opts.plan = plan;
  const testing::CompiledText c = testing::CompileText(text, opts);
  Outcome out;
  if (c.exe == nullptr) return {true, 1};
  for (const Step& s : c.exe->plan().steps) out.evaluator |= s.kind == Disposition::kEvaluator;
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*c.module, args);
  EXPECT_TRUE(want.ok()) << want.status();
  auto got = c.exe->Run(args);
  EXPECT_TRUE(got.ok()) << got.status();
  if (!want.ok() || !got.ok()) return {out.evaluator, 1};
  const std::vector<const Literal*> g = testing::ArrayLeaves(*got), w = testing::ArrayLeaves(*want);
  EXPECT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) {
    const PrimitiveType t = w[i]->shape().element_type();
    EXPECT_EQ(g[i]->shape(), w[i]->shape());
    out.mismatches += t == PrimitiveType::C128 || t == PrimitiveType::F64
                          ? CompareArrays<double>(*g[i], *w[i], ulps)
                          : CompareArrays<float>(*g[i], *w[i], ulps);
  }
  return out;
}

template <typename R>
Literal Complexes(PrimitiveType type, const std::vector<std::complex<R>>& v) {
  Literal l = Literal::Uninitialized(Shape(type, {static_cast<int64_t>(v.size())}));
  auto d = l.data<std::complex<R>>();
  for (size_t i = 0; i < v.size(); ++i) d[i] = v[i];
  return l;
}

template <typename R>
std::vector<std::complex<R>> Random(int64_t n, int seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<R> d(-4, 4);
  std::vector<std::complex<R>> v;
  for (int64_t i = 0; i < n; ++i) v.emplace_back(d(rng), d(rng));
  return v;
}

template <typename R>
std::vector<std::complex<R>> RandomAndSpecial(int64_t n) {
  std::vector<std::complex<R>> v = Random<R>(n, 3);
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
  if (n < 16) return v;
  // Both ends of the exponent range: the largest finite parts (the magnitude overflows), the
  // smallest normal ones; and parts of every size in between, up to 2^120 apart.
  const R max = std::numeric_limits<R>::max(), min = std::numeric_limits<R>::min();
  v[9] = {max, max};
  v[10] = {-max, 0};
  v[11] = {min, -max / 4};
  v[12] = {3 * min, 4 * min};
  v[13] = {-min, min};
  for (int64_t i = 16; i < n; i += 3)
    v[i] = {std::ldexp(v[i].real(), static_cast<int>(i % 241) - 120),
            std::ldexp(v[i].imag(), static_cast<int>(i % 239) - 120)};
  return v;
}

TEST(ComplexKernel, AbsMatchesTheEvaluator) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    for (int64_t n : {9, 100000}) {
      std::vector<Literal> c64, c128;
      c64.push_back(Complexes(PrimitiveType::C64, RandomAndSpecial<float>(n)));
      c128.push_back(Complexes(PrimitiveType::C128, RandomAndSpecial<double>(n)));
      for (const bool single : {true, false}) {
        const Outcome o =
            Compare(fmt::format("HloModule a\nENTRY main {{\n  x = {1}[{0}] parameter(0)\n"
                                "  ROOT a = {2}[{0}] abs(x)\n}}\n",
                                n, single ? "c64" : "c128", single ? "f32" : "f64"),
                    single ? c64 : c128, threads, 1);
        EXPECT_FALSE(o.evaluator);
        EXPECT_EQ(o.mismatches, 0);
      }
    }
  }
}

// Every unary and binary op on x, y (c64 or c128 [n]), one module per op.
TEST(ComplexKernel, EachOpMatchesTheEvaluator) {
  struct Op {
    const char* text;  // the instruction, on operands x and y, of result type {c} or {r}
    double ulps;
  };
  const std::vector<Op> ops = {
      {"{c}[{n}] add(x, y)", 1},
      {"{c}[{n}] subtract(x, y)", 1},
      {"{c}[{n}] multiply(x, y)", 4},
      {"{c}[{n}] divide(x, y)", 4},
      {"{c}[{n}] negate(x)", 0},
      {"{c}[{n}] exponential(x)", 16},
      {"{c}[{n}] log(x)", 8},
      {"{c}[{n}] sqrt(x)", 4},
      {"{c}[{n}] sign(x)", 2},
      {"{r}[{n}] real(x)", 0},
      {"{r}[{n}] imag(x)", 0},
      {"pred[{n}] compare(x, y), direction=EQ", 0},
      {"pred[{n}] compare(x, y), direction=NE", 0},
  };
  for (const char* c : {"c64", "c128"}) {
    const bool f = std::string(c) == "c64";
    const char* r = f ? "f32" : "f64";
    const int64_t n = 4099;
    std::vector<Literal> args;
    if (f) {
      std::vector<std::complex<float>> x = Random<float>(n, 1), y = Random<float>(n, 2);
      x[0] = 0;           // sqrt, sign and log of 0
      x[1] = {-2, 0};     // sqrt on the negative real axis
      x[2] = {-2, -0.0};  // and below it
      y[3] = x[3];        // compare equal
      args.push_back(Complexes(PrimitiveType::C64, x));
      args.push_back(Complexes(PrimitiveType::C64, y));
    } else {
      std::vector<std::complex<double>> x = Random<double>(n, 1), y = Random<double>(n, 2);
      x[0] = 0;
      x[1] = {-2, 0};
      x[2] = {-2, -0.0};
      y[3] = x[3];
      y[4] = {1e-300, 1e300};  // Smith's division keeps this one finite
      args.push_back(Complexes(PrimitiveType::C128, x));
      args.push_back(Complexes(PrimitiveType::C128, y));
    }
    for (const Op& op : ops) {
      const std::string instr =
          fmt::format(fmt::runtime(op.text), fmt::arg("c", c), fmt::arg("r", r), fmt::arg("n", n));
      SCOPED_TRACE(instr);
      const std::string text = fmt::format(
          "HloModule a\nENTRY main {{\n  x = {0}[{1}] parameter(0)\n  y = {0}[{1}] "
          "parameter(1)\n  ROOT o = {2}\n}}\n",
          c, n, instr);
      for (int threads : {1, 2}) {
        Outcome o = Compare(text, args, threads, op.ulps);
        EXPECT_FALSE(o.evaluator);
        EXPECT_EQ(o.mismatches, 0);
      }
    }
  }
}

// What jnp lowers complex code to: complex() of two real arrays, conj as
// complex(real, -imag), a constant array and a scalar constant broadcast, a transpose, a
// concatenate, converts from real and between complex types, a select on a compare, real and
// imag back out, all fused into one kernel.
TEST(ComplexKernel, FusedChainsWithDataMovement) {
  const std::string text = R"(HloModule a
ENTRY main {
  a = f32[4,8] parameter(0)
  b = f32[4,8] parameter(1)
  z = c64[4,8] complex(a, b)
  re = f32[4,8] real(z)
  im = f32[4,8] imag(z)
  nim = f32[4,8] negate(im)
  conj = c64[4,8] complex(re, nim)
  zz = c64[4,8] multiply(z, z)
  s = c64[4,8] add(zz, conj)
  k = c64[8] constant({(1, 2), (3, -4), (0.5, 0), (0, -1), (2, 2), (-1, 0.25), (7, 1), (0, 0)})
  kb = c64[4,8] broadcast(k), dimensions={1}
  half = c64[] constant((0.5, -0.5))
  hb = c64[4,8] broadcast(half), dimensions={}
  t = c64[4,8] multiply(s, kb)
  u = c64[4,8] divide(t, hb)
  ca = c64[4,8] convert(a)
  w = c64[4,8] subtract(u, ca)
  tr = c64[8,4] transpose(w), dimensions={1,0}
  cat = c64[8,8] concatenate(tr, tr), dimensions={1}
  d = c128[8,8] convert(cat)
  big = f32[4,8] abs(w)
  one = f32[] constant(1)
  ob = f32[4,8] broadcast(one), dimensions={}
  gt = pred[4,8] compare(big, ob), direction=GT
  sel = c64[4,8] select(gt, w, z)
  rs = f32[4,8] real(sel)
  iw = f32[4,8] imag(w)
  ROOT r = (c128[8,8], c64[4,8], f32[4,8], f32[4,8]) tuple(d, sel, rs, iw)
}
)";
  std::mt19937 rng(9);
  std::normal_distribution<double> nd;
  std::vector<double> a(32), b(32);
  for (double& v : a) v = nd(rng);
  for (double& v : b) v = nd(rng);
  std::vector<Literal> args;
  args.push_back(Literal::FromDoubles(Shape(PrimitiveType::F32, {4, 8}), a));
  args.push_back(Literal::FromDoubles(Shape(PrimitiveType::F32, {4, 8}), b));
  for (int threads : {1, 2}) {
    Outcome o = Compare(text, args, threads, 8);
    EXPECT_FALSE(o.evaluator);
    EXPECT_EQ(o.mismatches, 0);
  }
}

// A complex dot contracting a few elements (a quantum gate, jnp.einsum('ij,ajb->aib', h, s))
// is emitted in complex arithmetic, one kernel with what it fuses; split into four real dots
// (the GEMM form) each read the state's parts again. c64 and c128, a batch dimension too.
TEST(ComplexKernel, SmallComplexDotsAreOneKernel) {
  for (const char* t : {"c64", "c128"}) {
    SCOPED_TRACE(t);
    const std::string text = fmt::format(R"(HloModule g
ENTRY main {{
  s = {0}[64,2,96] parameter(0)
  h = {0}[2,2] parameter(1)
  n = {0}[64,2,96] negate(s)
  ROOT d = {0}[64,96,2] dot(n, h), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
}}
)",
                                         t);
    const bool wide = std::string(t) == "c128";
    std::vector<Literal> args;
    const PrimitiveType type = wide ? PrimitiveType::C128 : PrimitiveType::C64;
    auto make = [&](int64_t n, int seed, std::vector<int64_t> dims) {
      Literal l =
          wide ? Complexes(type, Random<double>(n, seed)) : Complexes(type, Random<float>(n, seed));
      return l.Reshape(dims);
    };
    args.push_back(make(64 * 2 * 96, 5, {64, 2, 96}));
    args.push_back(make(4, 6, {2, 2}));
    for (int threads : {1, 2}) {
      CompileOptions opts;
      opts.threads = threads;
      const testing::CompiledText c = testing::CompileText(text, opts);
      ASSERT_NE(c.exe, nullptr);
      EXPECT_EQ(c.exe->plan().kernels.size(), 1u);
      Outcome o = Compare(text, args, threads, 8);
      EXPECT_FALSE(o.evaluator);
      EXPECT_EQ(o.mismatches, 0);
    }
  }
}

TEST(ComplexKernel, AbsAfterAnFftAndBeforeAKernel) {
  // |rfft(x)| + 1, as jnp.abs(jnp.fft.rfft(x)) + 1 lowers: the FFT a library step, the rest
  // one kernel.
  std::mt19937 rng(5);
  std::normal_distribution<double> d;
  std::vector<double> x(64 * 256);
  for (double& v : x) v = d(rng);
  std::vector<Literal> args;
  args.push_back(Literal::FromDoubles(Shape(PrimitiveType::F32, {64, 256}), x));
  Outcome o = Compare(
      "HloModule a\nENTRY main {\n  x = f32[64,256] parameter(0)\n"
      "  f = c64[64,129] fft(x), fft_type=RFFT, fft_length={256}\n"
      "  a = f32[64,129] abs(f)\n  one = f32[] constant(1)\n"
      "  b = f32[64,129] broadcast(one), dimensions={}\n  ROOT r = f32[64,129] add(a, b)\n}\n",
      args, 2, 64);
  EXPECT_FALSE(o.evaluator);
  EXPECT_EQ(o.mismatches, 0);
}

TEST(ComplexKernel, WhatStaysOnTheEvaluator) {
  std::vector<Literal> args;
  args.push_back(Complexes(PrimitiveType::C64, Random<float>(16, 4)));
  // A complex sum: reductions of complex values are not emitted.
  const std::string sum = R"(HloModule a
add {
  p = c64[] parameter(0)
  q = c64[] parameter(1)
  ROOT s = c64[] add(p, q)
}
ENTRY main {
  x = c64[16] parameter(0)
  zero = c64[] constant((0, 0))
  ROOT r = c64[] reduce(x, zero), dimensions={0}, to_apply=add
}
)";
  Outcome o = Compare(sum, args, 1, 16);
  EXPECT_TRUE(o.evaluator);
  EXPECT_EQ(o.mismatches, 0);
  // Without complex kernels (gpu-nvptx's planner) the arithmetic goes to the evaluator too.
  PlanOptions no_complex = CpuPlanOptions();
  no_complex.complex_kernels = false;
  Outcome p = Compare(
      "HloModule a\nENTRY main {\n  x = c64[16] parameter(0)\n  ROOT m = c64[16] multiply(x, "
      "x)\n}\n",
      args, 1, 4, no_complex);
  EXPECT_TRUE(p.evaluator);
  EXPECT_EQ(p.mismatches, 0);
  std::string why;
  auto m = ParseHloModule(
      "HloModule a\nENTRY main {\n  x = c64[16] parameter(0)\n  ROOT t = c64[16] tanh(x)\n}\n",
      "a");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(kernel_plan::Emittable(*(*m)->entry()->root(), CpuPlanOptions(), &why));
  EXPECT_NE(why.find("complex"), std::string::npos) << why;
}

}  // namespace
}  // namespace kiln::cpu
