// A float division by a broadcast that does not change along the last dimension is a multiply
// by the reciprocal on cpu-llvm (elemental_emitter.cc): against the HLO evaluator's quotient
// within 2 ulp, with zeros, infinities and NaN in both operands matched exactly; the vector
// loop holds no division. A divisor broadcast along the last dimension keeps the division
// (bit for bit the evaluator's).
#include <cmath>
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

template <typename T>
Literal Values(PrimitiveType type, std::vector<int64_t> dims, int seed) {
  Literal l = Literal::Uninitialized(Shape(type, std::move(dims)));
  auto d = l.data<T>();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<T> u(-3, 3);
  for (auto& v : d) v = u(rng);
  return l;
}

// Runs the module on `args` through cpu-llvm and the evaluator; returns cpu-llvm's IR. Each
// element must be within `ulps` of the evaluator's (relative to it), NaN where it has NaN.
template <typename T>
std::string Compare(const std::string& text, std::vector<Literal> args, double ulps) {
  CompileOptions opts;
  opts.keep_ir = true;
  const testing::CompiledText c = testing::CompileText(text, opts);
  if (c.exe == nullptr) return "";
  HloEvaluator evaluator;
  auto want = evaluator.Evaluate(*c.module, args);
  EXPECT_TRUE(want.ok()) << want.status();
  auto got = c.exe->Run(args);
  EXPECT_TRUE(got.ok()) << got.status();
  if (!want.ok() || !got.ok()) return "";
  const double eps = std::numeric_limits<T>::epsilon();
  int bad = 0;
  for (int64_t i = 0; i < want->element_count() && bad < 5; ++i) {
    const double g = got->GetAsDouble(i), w = want->GetAsDouble(i);
    const bool ok = std::isnan(w) ? std::isnan(g)
                                  : g == w || (std::isfinite(w) && std::isfinite(g) &&
                                               std::abs(g - w) <= ulps * eps * std::abs(w));
    if (!ok) {
      ADD_FAILURE() << "element " << i << ": " << g << " vs " << w;
      ++bad;
    }
  }
  return c.exe->llvm_ir();
}

std::string RowDivide(const char* type, int rows, int cols, const char* dims) {
  return fmt::format(R"(HloModule m
ENTRY %main (x: {0}[{1},{2}], d: {0}[{4}]) -> {0}[{1},{2}] {{
  %x = {0}[{1},{2}] parameter(0)
  %d = {0}[{4}] parameter(1)
  %b = {0}[{1},{2}] broadcast(%d), dimensions={{{3}}}
  ROOT %q = {0}[{1},{2}] divide(%x, %b)
}}
)",
                     type, rows, cols, dims, std::string(dims) == "0" ? rows : cols);
}

template <typename T>
void SpecialValues(Literal& x, Literal& d, int cols) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  auto dv = d.data<T>();
  auto xv = x.data<T>();
  // Divisors 0, -0, inf, -inf and NaN for whole rows; numerators 0, inf and NaN in each row.
  dv[1] = 0;
  dv[2] = -0.0;
  dv[3] = inf;
  dv[4] = -inf;
  dv[5] = nan;
  for (int r = 0; r < 8; ++r) {
    xv[r * cols] = 0;
    xv[r * cols + 1] = -inf;
    xv[r * cols + 2] = nan;
    xv[r * cols + 3] = inf;
  }
}

TEST(DivideByBroadcast, RowDivisorIsAMultiplyByItsReciprocal) {
  for (int cols : {100, 1000}) {
    Literal x = Values<float>(PrimitiveType::F32, {64, cols}, 1);
    Literal d = Values<float>(PrimitiveType::F32, {64}, 2);
    SpecialValues<float>(x, d, cols);
    std::vector<Literal> args;
    args.push_back(std::move(x));
    args.push_back(std::move(d));
    const std::string ir = Compare<float>(RowDivide("f32", 64, cols, "0"), std::move(args), 2);
    EXPECT_EQ(ir.find("fdiv <"), std::string::npos) << "a vector division remains";
    EXPECT_NE(ir.find("fdiv float 1.0"), std::string::npos) << "no reciprocal";
  }
}

TEST(DivideByBroadcast, F64AndAScalarDivisor) {
  Literal x = Values<double>(PrimitiveType::F64, {64, 300}, 3);
  Literal d = Values<double>(PrimitiveType::F64, {64}, 4);
  SpecialValues<double>(x, d, 300);
  std::vector<Literal> args;
  args.push_back(std::move(x));
  args.push_back(std::move(d));
  const std::string ir = Compare<double>(RowDivide("f64", 64, 300, "0"), std::move(args), 2);
  EXPECT_EQ(ir.find("fdiv <"), std::string::npos) << "a vector division remains";
  // A quantization's scale: x / (max |x| / 127).
  const std::string scale = R"(HloModule m
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[512,256]) -> f32[512,256] {
  %x = f32[512,256] parameter(0)
  %ax = f32[512,256] abs(%x)
  %z = f32[] constant(0)
  %m = f32[] reduce(%ax, %z), dimensions={0,1}, to_apply=%max
  %k = f32[] constant(127)
  %s = f32[] divide(%m, %k)
  %b = f32[512,256] broadcast(%s), dimensions={}
  ROOT %q = f32[512,256] divide(%x, %b)
}
)";
  std::vector<Literal> one;
  one.push_back(Values<float>(PrimitiveType::F32, {512, 256}, 5));
  EXPECT_EQ(Compare<float>(scale, std::move(one), 2).find("fdiv <"), std::string::npos);
}

TEST(DivideByBroadcast, DivisorAlongTheLastDimensionKeepsTheDivision) {
  Literal x = Values<float>(PrimitiveType::F32, {64, 100}, 6);
  Literal d = Values<float>(PrimitiveType::F32, {100}, 7);
  std::vector<Literal> args;
  args.push_back(std::move(x));
  args.push_back(std::move(d));
  // Exact: the quotient itself, no reciprocal per element.
  const std::string ir = Compare<float>(RowDivide("f32", 64, 100, "1"), std::move(args), 0);
  EXPECT_NE(ir.find("fdiv <"), std::string::npos) << "the division was rewritten";
}

}  // namespace
}  // namespace kiln::cpu
