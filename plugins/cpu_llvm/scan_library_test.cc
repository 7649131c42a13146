// cpu-llvm's running reductions (scan_library.h) against sums, products, maxima and minima
// computed here one element after another in double (the evaluator's window form is n^2):
// f32, f64, s32 and s64; forward and reverse; along the minor, a middle and the first
// dimension; one long run cut into chunks (one and two threads); NaN propagation; and the
// reduce-windows the library leaves alone.
#include "plugins/cpu_llvm/scan_library.h"

#include <cmath>
#include <random>
#include <string>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "hlo/text/parser.h"
#include "plugins/cpu_llvm/text_module_test_util.h"

namespace kiln::cpu {
namespace {

// A running `op` of x (`type`[`dims`]) along `dim` from `init`, reverse or not.
std::string ScanModule(const std::string& type, const std::vector<int64_t>& dims, int dim,
                       bool reverse, const std::string& op, const std::string& init) {
  std::string shape, window;
  for (size_t d = 0; d < dims.size(); ++d) {
    shape += fmt::format("{}{}", d ? "," : "", dims[d]);
    window += fmt::format("{}{}", d ? "x" : "size=", static_cast<int64_t>(d) == dim ? dims[d] : 1);
  }
  std::string pads;
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t n = static_cast<int64_t>(d) == dim ? dims[d] : 1;
    pads += fmt::format("{}{}", d ? "x" : " pad=",
                        n == 1    ? "0_0"
                        : reverse ? fmt::format("0_{}", n - 1)
                                  : fmt::format("{}_0", n - 1));
  }
  return fmt::format(
      "HloModule s\nf {{\n  a = {0}[] parameter(0)\n  b = {0}[] parameter(1)\n"
      "  ROOT r = {0}[] {1}(a, b)\n}}\nENTRY main {{\n  x = {0}[{2}] parameter(0)\n"
      "  i = {0}[] constant({3})\n  ROOT y = {0}[{2}] reduce-window(x, i), window={{{4}{5}}}, "
      "to_apply=f\n}}\n",
      type, op, shape, init, window, pads);
}

double Apply(const std::string& op, double a, double b) {
  if (op == "add") return a + b;
  if (op == "multiply") return a * b;
  if (std::isnan(a) || std::isnan(b)) return NAN;
  return op == "maximum" ? std::max(a, b) : std::min(a, b);
}

// Runs the module on `x` with `threads` and compares with the scan computed here.
void Check(const std::string& type, const std::vector<int64_t>& dims, int dim, bool reverse,
           const std::string& op, const std::string& init, double identity, const Literal& x,
           int threads, double tolerance) {
  const std::string text = ScanModule(type, dims, dim, reverse, op, init);
  SCOPED_TRACE(text);
  auto parsed = ParseHloModule(text, "s");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(IsScanLibraryCall(*(*parsed)->entry()->root()));
  CompileOptions opts;
  opts.threads = threads;
  const testing::CompiledText c = testing::CompileText(text, opts);
  ASSERT_NE(c.exe, nullptr);
  bool library = false;  // the plan's step, not a kernel of n^2 / 2 operations
  for (const kernel_plan::Step& st : c.exe->plan().steps)
    library |= st.instr->opcode() == HloOpcode::kReduceWindow &&
               st.kind == kernel_plan::Disposition::kLibrary;
  EXPECT_TRUE(library);
  auto got = c.exe->Run(std::vector<const Literal*>{&x});
  ASSERT_TRUE(got.ok()) << got.status();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= dims[d];
  for (size_t d = dim + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t n = dims[dim];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      double acc = identity;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t i = reverse ? n - 1 - s : s;
        const int64_t e = (o * n + i) * inner + j;
        acc = Apply(op, acc, x.GetAsDouble(e));
        const double g = got->GetAsDouble(e);
        if (std::isnan(acc)) {
          ASSERT_TRUE(std::isnan(g)) << "element " << e;
        } else {
          ASSERT_NEAR(g, acc, tolerance * std::max(1.0, std::fabs(acc))) << "element " << e;
        }
      }
    }
}

Literal Random(PrimitiveType t, const std::vector<int64_t>& dims, double lo, double hi,
               uint32_t seed) {
  Literal x(Shape(t, dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t e = 0; e < x.element_count(); ++e)
    x.SetFromDouble(
        e, t == PrimitiveType::S32 || t == PrimitiveType::S64 ? std::floor(u(rng)) : u(rng));
  return x;
}

TEST(ScanLibrary, OneLongSumInChunks) {
  // jnp.cumsum of 2^17 floats: chunks' totals, then each chunk; carried in double, so within
  // a few f32 roundings of the exact running sum (a sequential f32 sum drifts by n eps).
  const Literal x = Random(PrimitiveType::F32, {1 << 17}, -1, 1, 1);
  for (int threads : {1, 2}) Check("f32", {1 << 17}, 0, false, "add", "0", 0, x, threads, 1e-6);
  Check("f32", {1 << 17}, 0, true, "add", "0", 0, x, 2, 1e-6);
}

TEST(ScanLibrary, MiddleAndFirstDimensionsExactForIntegers) {
  const Literal a = Random(PrimitiveType::S32, {3, 5000, 7}, -100, 100, 2);
  for (int threads : {1, 2}) Check("s32", {3, 5000, 7}, 1, true, "add", "0", 0, a, threads, 0);
  const Literal b = Random(PrimitiveType::S64, {300, 70}, -1000, 1000, 3);
  Check("s64", {300, 70}, 0, false, "minimum", "9223372036854775807", INFINITY, b, 2, 0);
}

TEST(ScanLibrary, ProductsMaximaAndNan) {
  const Literal p = Random(PrimitiveType::F32, {64, 128}, 0.97, 1.03, 4);
  for (int threads : {1, 2})
    Check("f32", {64, 128}, 1, false, "multiply", "1", 1, p, threads, 1e-6);
  Literal m = Random(PrimitiveType::F64, {300, 40}, -5, 5, 5);
  m.SetFromDouble(7 * 40 + 3, NAN);
  m.SetFromDouble(200 * 40 + 9, NAN);
  for (int threads : {1, 2})
    Check("f64", {300, 40}, 0, false, "maximum", "-inf", -INFINITY, m, threads, 0);
  const Literal r = Random(PrimitiveType::F64, {2, 40000}, -5, 5, 6);
  Check("f64", {2, 40000}, 1, true, "maximum", "-inf", -INFINITY, r, 2, 0);
}

TEST(ScanLibrary, OtherWindowsStay) {
  auto taken = [](const std::string& text) {
    auto parsed = ParseHloModule(text, "s");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return parsed.ok() && IsScanLibraryCall(*(*parsed)->entry()->root());
  };
  EXPECT_TRUE(taken(ScanModule("f32", {4, 100}, 1, false, "add", "0")));
  EXPECT_FALSE(taken(ScanModule("f32", {4, 100}, 1, false, "add", "1")));  // init applied n times
  EXPECT_FALSE(taken(ScanModule("f32", {4, 100}, 1, false, "subtract", "0")));
  EXPECT_FALSE(taken(ScanModule("f32", {4, 100}, 1, false, "maximum", "0")));
  EXPECT_FALSE(taken(ScanModule("f32", {4, 20}, 1, false, "add", "0")));  // short: log steps
  EXPECT_FALSE(taken(ScanModule("bf16", {4, 100}, 1, false, "add", "0")));
}

}  // namespace
}  // namespace kiln::cpu
