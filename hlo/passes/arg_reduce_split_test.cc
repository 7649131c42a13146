// Tests of the arg-max / arg-min split: the rewritten module holds no variadic reduce and
// gives the evaluator's values on random inputs, and on inputs with ties, NaN and
// infinities; reducers that only look alike stay.
#include "hlo/passes/arg_reduce_split.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/passes/test_util.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// jnp.argmax(x, axis=1) as JAX 0.4-0.7 lowers it (the reducer written out by hand, with
// XLA's names).
constexpr char kArgmax[] = R"(
HloModule argmax
region_0.1 {
  a = f32[] parameter(0)
  b = f32[] parameter(2)
  gt = pred[] compare(a, b), direction=GT
  ne = pred[] compare(a, a), direction=NE
  or.2 = pred[] or(gt, ne)
  v = f32[] select(or.2, a, b)
  eq = pred[] compare(a, b), direction=EQ
  i = s32[] parameter(1)
  j = s32[] parameter(3)
  lt = pred[] compare(i, j), direction=LT
  and = pred[] and(eq, lt)
  or.3 = pred[] or(or.2, and)
  k = s32[] select(or.3, i, j)
  ROOT t = (f32[], s32[]) tuple(v, k)
}
ENTRY main {
  x = f32[6,9] parameter(0)
  iota = s32[9] iota(), iota_dimension=0
  ib = s32[6,9] broadcast(iota), dimensions={1}
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  r = (f32[6], s32[6]) reduce(x, ib, ninf, zero), dimensions={1}, to_apply=region_0.1
  m = f32[6] get-tuple-element(r), index=0
  ROOT idx = s32[6] get-tuple-element(r), index=1
}
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

void ExpectSplit(const std::string& hlo) {
  ArgReduceSplit pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, hlo, &changed);
  EXPECT_TRUE(changed) << hlo;
  EXPECT_EQ(out.find("(f32[6]{0}, s32[6]{0}) reduce("), std::string::npos) << out;
  EXPECT_TRUE(PassPreservesValues(pass, hlo));
}

TEST(ArgReduceSplitTest, ArgmaxAndArgmin) {
  ExpectSplit(kArgmax);
  // argmin: the same reducer with LT; and over both dimensions, to a scalar.
  ExpectSplit(Replace(kArgmax, "direction=GT", "direction=LT"));
  std::string all =
      Replace(Replace(kArgmax, "dimensions={1}, to_apply", "dimensions={0,1}, to_apply"),
              "(f32[6], s32[6]) reduce", "(f32[], s32[]) reduce");
  all = Replace(Replace(all, "m = f32[6] get", "m = f32[] get"), "idx = s32[6] get",
                "idx = s32[] get");
  ExpectSplit(all);
}

// Ties (the first index wins), NaN (the first NaN wins, the value is NaN), infinities and
// an init that wins: the split module's values equal the evaluator's on the original.
TEST(ArgReduceSplitTest, TiesNanInfinityAndInit) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::string hlo = Replace(kArgmax, "constant(-inf)", "constant(7)");
  hlo = Replace(hlo, "zero = s32[] constant(0)", "zero = s32[] constant(-5)");
  std::unique_ptr<HloModule> before = ParseHloModule(hlo, "m").value();
  std::unique_ptr<HloModule> after = ParseHloModule(hlo, "m").value();
  ArgReduceSplit pass;
  ASSERT_TRUE(pass.Run(*after).value());
  // Rows: ties at the max, a NaN after the max, two NaNs, +inf twice, everything below the
  // init (7: its index -5 wins), the init tied by an element (the smaller index: -5).
  std::vector<double> v = {1,   9, 9,   0, 2, 9, 1, 0, 0, 2,   5, nan, 1, 2, 3, 4, 5, 6,
                           nan, 1, nan, 2, 3, 4, 5, 6, 1, inf, 1, inf, 2, 3, 4, 5, 6, 1,
                           1,   2, 3,   4, 5, 6, 1, 2, 3, 1,   7, 3,   4, 5, 7, 1, 2, 3};
  Literal x = Literal::FromDoubles(Shape(PrimitiveType::F32, {6, 9}), v);
  HloEvaluator evaluator;
  Literal want = evaluator.Evaluate(*before, std::vector<Literal>{x}).value();
  Literal got = evaluator.Evaluate(*after, std::vector<Literal>{x}).value();
  for (int r = 0; r < 6; ++r) EXPECT_EQ(got.GetAsDouble(r), want.GetAsDouble(r)) << "row " << r;
  // The evaluator's own answers, worked out by hand.
  const double by_hand[] = {1, 2, 0, 0, -5, -5};
  for (int r = 0; r < 6; ++r) EXPECT_EQ(want.GetAsDouble(r), by_hand[r]) << "row " << r;
}

// jnp.select's argmax over its stacked boolean conditions (the first true; none true gives
// the init's index), as JAX 0.10 writes the reducer: a GT of the booleans, ties to the
// smaller index. Split into an or-reduce and the first matching index, the evaluator's
// values on random masks (including all-false columns).
constexpr char kBoolArgmax[] = R"(
HloModule select
region_0.1 {
  a = pred[] parameter(0)
  b = pred[] parameter(2)
  gt = pred[] compare(a, b), direction=GT
  v = pred[] select(gt, a, b)
  eq = pred[] compare(a, b), direction=EQ
  i = s32[] parameter(1)
  j = s32[] parameter(3)
  lt = pred[] compare(i, j), direction=LT
  and = pred[] and(eq, lt)
  or = pred[] or(gt, and)
  k = s32[] select(or, i, j)
  ROOT t = (pred[], s32[]) tuple(v, k)
}
ENTRY main {
  x = pred[5,300] parameter(0)
  iota = s32[5] iota(), iota_dimension=0
  ib = s32[5,300] broadcast(iota), dimensions={0}
  f = pred[] constant(false)
  zero = s32[] constant(0)
  r = (pred[300], s32[300]) reduce(x, ib, f, zero), dimensions={0}, to_apply=region_0.1
  ROOT idx = s32[300] get-tuple-element(r), index=1
}
)";

TEST(ArgReduceSplitTest, BooleanArgmaxIsTheFirstTrue) {
  ArgReduceSplit pass;
  bool changed = false;
  const std::string out = RunPassAndPrint(pass, kBoolArgmax, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("(pred[300]{0}, s32[300]{0}) reduce("), std::string::npos) << out;
  EXPECT_NE(out.find("or("), std::string::npos) << out;
  EXPECT_TRUE(PassPreservesValues(pass, kBoolArgmax, 5));
  // argmin: the first false.
  EXPECT_TRUE(PassPreservesValues(pass, Replace(kBoolArgmax, "direction=GT", "direction=LT"), 5));
}

// A reducer that keeps the larger index among ties, one that returns the value's index
// from the other operand, and a three-operand reduce are not arg reduces: left alone.
TEST(ArgReduceSplitTest, LookAlikesStay) {
  for (const std::string& hlo :
       {Replace(kArgmax, "direction=LT", "direction=GT"),
        Replace(kArgmax, "k = s32[] select(or.3, i, j)", "k = s32[] select(or.2, i, j)")}) {
    ArgReduceSplit pass;
    bool changed = true;
    RunPassAndPrint(pass, hlo, &changed);
    EXPECT_FALSE(changed) << hlo;
  }
}

}  // namespace
}  // namespace kiln
