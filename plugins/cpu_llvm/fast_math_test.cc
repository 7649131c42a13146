// Accuracy of the emitter's f32 exp/expm1/log/log1p/tanh/erf/logistic/atan2
// (plugins/llvm_emitter/fast_math.h), JIT-compiled through the CPU compiler, against the
// double-precision C library over dense sweeps: a stride through all f32 bit patterns, a fine grid
// over the range where the functions vary, and the edge cases (+-0, +-inf, NaN, denormals, overflow
// thresholds), with denormals flushed as cpu-llvm runs (flush_denormals.h). Prints the max error in
// ulps of the correctly rounded f32 result (README.md quotes them).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/cpu_llvm/test_builder.h"

namespace kiln::cpu {
namespace {

using PT = PrimitiveType;

std::vector<float> Inputs() {
  std::vector<float> v;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    float f;
    uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&f, &b, 4);
    v.push_back(f);
  }
  for (int i = -2000000; i <= 2000000; ++i) v.push_back(i * 1e-5f);  // [-20, 20]
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0f,
                  -0.0f,
                  inf,
                  -inf,
                  std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(),
                  -std::numeric_limits<float>::denorm_min(),
                  1e-40f,
                  -1e-40f,
                  std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max(),
                  88.72283f,
                  88.7229f,
                  89.0f,
                  -87.33654f,
                  -103.27893f,
                  -103.97208f,
                  -104.0f,
                  -200.0f,
                  1.0f,
                  -1.0f,
                  3.92f,
                  4.0f,
                  9.0f,
                  9.5f,
                  1e-30f,
                  0.5f,
                  0.6931472f,
                  1.4142135f,
                  0.70710677f})
    v.push_back(f);
  return v;
}

// |got - want| in ulps of the f32 nearest `want` (denormal spacing below FLT_MIN). Exact
// matches of infinities and NaN count 0; any other mismatch there is infinite error.
double UlpError(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  float w = static_cast<float>(want);  // the correctly rounded f32 may overflow to inf
  if (std::isinf(w) || std::isinf(got)) return got == w ? 0 : INFINITY;
  int e;
  std::frexp(std::fabs(static_cast<double>(w)), &e);
  double ulp = std::ldexp(1.0, std::max(e, -125) - 24);
  if (w == 0) ulp = std::ldexp(1.0, -149);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

struct Result {
  double max_ulp = 0;
  float worst_x = 0;
};

Result Measure(HloOpcode op, const std::function<double(double)>& ref, std::string* ir) {
  auto module = std::make_shared<HloModule>("m");
  HloComputation* entry = module->AddComputation(std::make_unique<HloComputation>("main"), true);
  testing::Builder b(entry);
  std::vector<float> in = Inputs();
  Shape s(PT::F32, {static_cast<int64_t>(in.size())});
  entry->set_root(b.Unary(op, b.Param(0, s)));
  CompileOptions opts;
  opts.keep_ir = true;
  auto compiler = CpuCompiler::Create(opts);
  EXPECT_TRUE(compiler.ok()) << compiler.status();
  if (!compiler.ok()) return {};
  auto exe = (*compiler)->Compile(module);
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!exe.ok()) return {};
  *ir = (*exe)->llvm_ir();
  Literal arg(s);
  std::memcpy(arg.untyped_data(), in.data(), in.size() * 4);
  std::vector<Literal> args;
  args.push_back(std::move(arg));
  auto out = (*exe)->Run(args);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  const float* got = reinterpret_cast<const float*>(out->untyped_data());
  // cpu-llvm computes with denormals flushed to zero, as XLA:CPU does: a denormal input
  // reads as a zero of its sign, and a result below FLT_MIN may come out as zero.
  Result r;
  for (size_t i = 0; i < in.size(); ++i) {
    const float x = std::fpclassify(in[i]) == FP_SUBNORMAL ? std::copysign(0.0f, in[i]) : in[i];
    const double want = ref(x);
    // log1p and expm1 give a tiny x back as it is, denormal or not.
    const bool flushed =
        (got[i] == 0 || got[i] == in[i]) && std::fabs(want) < std::numeric_limits<float>::min();
    double e = flushed ? 0 : UlpError(got[i], want);
    if (e > r.max_ulp) r = {e, in[i]};
  }
  return r;
}

void Check(const char* name, HloOpcode op, const std::function<double(double)>& ref,
           double max_ulp) {
  std::string ir;
  Result r = Measure(op, ref, &ir);
  std::printf("%-8s max error %.2f ulp (at x = %.9g)\n", name, r.max_ulp, r.worst_x);
  EXPECT_LE(r.max_ulp, max_ulp) << name << " worst at x = " << r.worst_x;
  // Straight-line vector code, no libm call in the loop.
  EXPECT_NE(ir.find("x float>"), std::string::npos) << name;
  // Only intrinsics (fabs, fmuladd, ... in the scalar remainder loop) may be called.
  for (size_t at = ir.find("call float @"); at != std::string::npos;
       at = ir.find("call float @", at + 1))
    EXPECT_EQ(ir.compare(at + 12, 5, "llvm."), 0) << name << ": calls " << ir.substr(at, 40);
  EXPECT_EQ(ir.find("@_ZGV"), std::string::npos) << name << ": a vector libm call remains";
}

TEST(CpuFastMath, Exp) {
  Check(
      "exp", HloOpcode::kExp, [](double x) { return std::exp(x); }, 1);
}
TEST(CpuFastMath, Log) {
  Check(
      "log", HloOpcode::kLog, [](double x) { return std::log(x); }, 3);
}
TEST(CpuFastMath, Log1p) {
  Check(
      "log1p", HloOpcode::kLog1p, [](double x) { return std::log1p(x); }, 4);
}
TEST(CpuFastMath, Expm1) {
  Check(
      "expm1", HloOpcode::kExpm1, [](double x) { return std::expm1(x); }, 2);
}
TEST(CpuFastMath, Tanh) {
  Check(
      "tanh", HloOpcode::kTanh, [](double x) { return std::tanh(x); }, 3);
}
TEST(CpuFastMath, Erf) {
  Check(
      "erf", HloOpcode::kErf, [](double x) { return std::erf(x); }, 3);
}
TEST(CpuFastMath, Logistic) {
  Check(
      "logistic", HloOpcode::kLogistic, [](double x) { return 1 / (1 + std::exp(-x)); }, 3);
}

// atan2(y, x) over pairs: every angle on a fine grid at radii from 1e-30 to 1e30, the bit
// pattern sweep against its reverse, and every pair of special values (signed zeros,
// infinities, NaN, denormals, the largest floats): within 1 ulp of the C library's f32
// result there, with its sign (the octants of zeros and infinities exact).
TEST(CpuFastMath, Atan2) {
  std::vector<float> ys, xs;
  for (int64_t i = 0; i < 400000; ++i) {
    const double angle = std::numbers::pi * (2 * (i + 0.5) / 400000 - 1);
    const double radius = std::pow(10.0, -30 + 60 * ((i * 7919) % 400000) / 400000.0);
    ys.push_back(static_cast<float>(radius * std::sin(angle)));
    xs.push_back(static_cast<float>(radius * std::cos(angle)));
  }
  const std::vector<float> sweep = Inputs();
  for (size_t i = 0; i < sweep.size(); i += 3) {
    ys.push_back(sweep[i]);
    xs.push_back(sweep[sweep.size() - 1 - i]);
  }
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {0.0f,
                                      -0.0f,
                                      inf,
                                      -inf,
                                      std::numeric_limits<float>::quiet_NaN(),
                                      1.0f,
                                      -1.0f,
                                      1e-40f,
                                      std::numeric_limits<float>::max(),
                                      -std::numeric_limits<float>::max(),
                                      0.41421356f};
  const size_t first_special = ys.size();
  for (float y : special)
    for (float x : special) {
      ys.push_back(y);
      xs.push_back(x);
    }
  auto module = std::make_shared<HloModule>("m");
  HloComputation* entry = module->AddComputation(std::make_unique<HloComputation>("main"), true);
  testing::Builder b(entry);
  Shape s(PT::F32, {static_cast<int64_t>(ys.size())});
  entry->set_root(b.Binary(HloOpcode::kAtan2, b.Param(0, s), b.Param(1, s)));
  CompileOptions opts;
  opts.keep_ir = true;
  auto compiler = CpuCompiler::Create(opts);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  auto exe = (*compiler)->Compile(module);
  ASSERT_TRUE(exe.ok()) << exe.status();
  const std::string& ir = (*exe)->llvm_ir();
  EXPECT_NE(ir.find("x float>"), std::string::npos);
  EXPECT_EQ(ir.find("atan2f"), std::string::npos) << "a libm call remains";
  std::vector<Literal> args;
  for (const std::vector<float>* v : {&ys, &xs}) {
    Literal arg(s);
    std::memcpy(arg.untyped_data(), v->data(), v->size() * 4);
    args.push_back(std::move(arg));
  }
  auto out = (*exe)->Run(args);
  ASSERT_TRUE(out.ok()) << out.status();
  const float* got = reinterpret_cast<const float*>(out->untyped_data());
  auto flush = [](float v) {
    return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v;
  };
  // A result below FLT_MIN may come out as a zero (denormals flushed, as XLA:CPU does).
  auto error = [&](size_t i, double want) {
    return got[i] == 0 && std::fabs(want) < std::numeric_limits<float>::min()
               ? 0
               : UlpError(got[i], want);
  };
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < first_special; ++i) {
    const double e =
        error(i, std::atan2(static_cast<double>(flush(ys[i])), static_cast<double>(flush(xs[i]))));
    if (e > worst) {
      worst = e;
      at = i;
    }
  }
  std::printf("atan2    max error %.2f ulp (at y = %.9g, x = %.9g)\n", worst, ys[at], xs[at]);
  EXPECT_LE(worst, 3) << "worst at y = " << ys[at] << ", x = " << xs[at];
  for (size_t i = first_special; i < ys.size(); ++i) {
    const float want = std::atan2(flush(ys[i]), flush(xs[i]));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << "atan2(" << ys[i] << ", " << xs[i] << ")";
    } else {
      EXPECT_LE(error(i, want), 1) << "atan2(" << ys[i] << ", " << xs[i] << ") = " << got[i];
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want))
          << "atan2(" << ys[i] << ", " << xs[i] << ")";
    }
  }
}

// The sign of zero and the exact limits.
TEST(CpuFastMath, SpecialValuesExact) {
  // Run each function on a few inputs and compare bit patterns with the C library's f32.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> limits = {0.0f, -0.0f, inf, -inf, -1.0f, 200.0f, -200.0f};
  // log1p and expm1: where they are exact (and -2, NaN; 100, past expm1's overflow).
  const std::vector<float> near_zero = {0.0f, -0.0f, inf, -inf, -1.0f, -2.0f, 100.0f, 1e-30f};
  for (auto [op, fn, in] : std::vector<std::tuple<HloOpcode, float (*)(float), std::vector<float>>>{
           {HloOpcode::kExp, [](float x) { return std::exp(x); }, limits},
           {HloOpcode::kLog, [](float x) { return std::log(x); }, limits},
           {HloOpcode::kTanh, [](float x) { return std::tanh(x); }, limits},
           {HloOpcode::kErf, [](float x) { return std::erf(x); }, limits},
           {HloOpcode::kLog1p, [](float x) { return std::log1p(x); }, near_zero},
           {HloOpcode::kExpm1, [](float x) { return std::expm1(x); }, near_zero}}) {
    auto module = std::make_shared<HloModule>("m");
    HloComputation* entry = module->AddComputation(std::make_unique<HloComputation>("main"), true);
    testing::Builder b(entry);
    Shape s(PT::F32, {static_cast<int64_t>(in.size())});
    entry->set_root(b.Unary(op, b.Param(0, s)));
    auto compiler = CpuCompiler::Create({});
    ASSERT_TRUE(compiler.ok());
    auto exe = (*compiler)->Compile(module);
    ASSERT_TRUE(exe.ok()) << exe.status();
    Literal arg(s);
    std::memcpy(arg.untyped_data(), in.data(), in.size() * 4);
    std::vector<Literal> args;
    args.push_back(std::move(arg));
    auto out = (*exe)->Run(args);
    ASSERT_TRUE(out.ok()) << out.status();
    const float* got = reinterpret_cast<const float*>(out->untyped_data());
    for (size_t i = 0; i < in.size(); ++i) {
      float want = fn(in[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << HloOpcodeString(op) << "(" << in[i] << ")";
      } else {
        EXPECT_EQ(got[i], want) << HloOpcodeString(op) << "(" << in[i] << ")";
        EXPECT_EQ(std::signbit(got[i]), std::signbit(want))
            << HloOpcodeString(op) << "(" << in[i] << ")";
      }
    }
  }
}

// An f16 tanh: the sign goes onto the result through its bits, not a copysign (which LLVM's
// x86 back end moves past the rounding to half and then applies lane by lane, 5x slower);
// values of both signs, zeros, infinities and a NaN against the evaluator.
TEST(CpuFastMath, HalfTanhKeepsItsSignWithoutCopysign) {
  auto parsed = ParseHloModule(
      "HloModule t\nENTRY main {\n  x = f16[4096] parameter(0)\n"
      "  ROOT t = f16[4096] tanh(x)\n}\n",
      "t");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::shared_ptr<const HloModule> module(std::move(*parsed));
  CompileOptions options;
  options.keep_ir = true;
  auto compiler = CpuCompiler::Create(options);
  ASSERT_TRUE(compiler.ok());
  auto exe = (*compiler)->Compile(module);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->llvm_ir().find("copysign"), std::string::npos) << (*exe)->llvm_ir();
  std::vector<double> v(4096);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (static_cast<double>(i) - 2048) / 256;
  v[0] = std::numeric_limits<double>::infinity();
  v[1] = -std::numeric_limits<double>::infinity();
  v[2] = std::numeric_limits<double>::quiet_NaN();
  v[3] = -0.0;
  std::vector<Literal> args;
  args.push_back(Literal::FromDoubles(Shape(PT::F16, {4096}), v));
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = (*exe)->Run(args);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t i = 0; i < 4096; ++i) {
    const double g = got->GetAsDouble(i), w = want->GetAsDouble(i);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << i;
      continue;
    }
    EXPECT_NEAR(g, w, 1e-3) << "tanh(" << v[i] << ")";
    EXPECT_EQ(std::signbit(g), std::signbit(w)) << "tanh(" << v[i] << ")";
  }
}

}  // namespace
}  // namespace kiln::cpu
