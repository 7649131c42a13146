// Tests of constant folding.
#include "hlo/passes/constant_folding.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

TEST(ConstantFoldingTest, FoldsArithmeticChains) {
  // (2 + 3) * [1, 2, 3] = [5, 10, 15], computed by hand.
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  p = f32[3] parameter(0)
  a = f32[] constant(2)
  b = f32[] constant(3)
  s = f32[] add(a, b)
  v = f32[3] constant({1, 2, 3})
  r = f32[3] reshape(v)
  five = f32[3] broadcast(s), dimensions={}
  m = f32[3] multiply(five, r)
  ROOT o = f32[3] add(p, m)
}
)";
  HloConstantFolding pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_TRUE(changed);
  // The multiply folds from the broadcast of the folded scalar (a small result).
  EXPECT_FILECHECK(out, R"(
    CHECK: [[M:%constant.[0-9]+]] = f32[3]{0} constant({5, 10, 15})
    CHECK: ROOT {{.*}} add({{.*}}, f32[3]{0} [[M]])
    CHECK-NOT: multiply
    CHECK-NOT: reshape
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

TEST(ConstantFoldingTest, FoldsToHandComputedValues) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  a = s32[2,2] constant({{1, 2}, {3, 4}})
  t = s32[2,2] transpose(a), dimensions={1,0}
  n = s32[2,2] negate(t)
  c = pred[2,2] compare(n, a), direction=LT
  ROOT o = (s32[2,2], pred[2,2]) tuple(n, c)
}
)";
  HloConstantFolding pass;
  std::string out = RunPassAndPrint(pass, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK: s32[2,2]{1,0} constant({ {-1, -3}, {-2, -4} })
    CHECK: pred[2,2]{1,0} constant({ {true, true}, {true, true} })
    CHECK-NOT: negate
    CHECK-NOT: compare
  )");
}

TEST(ConstantFoldingTest, LeavesBroadcastIotaRandomAndBigResults) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  z = f32[] constant(0)
  one = f32[] constant(1)
  b = f32[8] broadcast(z), dimensions={}
  i = s32[8] iota(), iota_dimension=0
  r = f32[8] rng(z, one), distribution=rng_uniform
  pair = f32[2] constant({1, 2})
  big = f32[35000,2] broadcast(pair), dimensions={1}
  e = f32[35000,2] exponential(big)
  ROOT o = (f32[8], s32[8], f32[8], f32[35000,2]) tuple(b, i, r, e)
}
)";
  HloConstantFolding pass;
  bool changed = true;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_FALSE(changed) << out;
}

// A complex 2x2 gate divided by a broadcast sqrt(2) folds (the kernels that read it divided
// again per element: a 20-qubit circuit 48 -> 14.5 ms); a broadcast alone stays, and so does a
// large result made from broadcasts of arrays (a large constant of small ones).
TEST(ConstantFoldingTest, FoldsSmallResultsOfBroadcastConstants) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  g = c64[2,2] constant({ {(1, 0), (1, 0)}, {(1, 0), (-1, 0)} })
  r = c64[] constant((2, 0))
  b = c64[2,2] broadcast(r), dimensions={}
  h = c64[2,2] divide(g, b)
  pair = f32[2] constant({1, 2})
  wide = f32[1024,2] broadcast(pair), dimensions={1}
  e = f32[1024,2] exponential(wide)
  ROOT o = (c64[2,2], f32[1024,2]) tuple(h, e)
}
)";
  HloConstantFolding pass;
  std::string out = RunPassAndPrint(pass, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK: c64[2,2]{1,0} constant({ {(0.5, 0), (0.5, 0)}, {(0.5, 0), (-0.5, 0)} })
    CHECK-NOT: divide
    CHECK: exponential(
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

// Elementwise ops of broadcast scalar constants fold to a broadcast of the scalar result at
// any size: jnp.remainder's guarded divisor select(b == 0, 1, b) with b a broadcast 2.
TEST(ConstantFoldingTest, ElementwiseOfScalarBroadcastsStaysABroadcast) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  x = s32[1048576] parameter(0)
  two = s32[] constant(2)
  zero = s32[] constant(0)
  one = s32[] constant(1)
  b = s32[1048576] broadcast(two), dimensions={}
  z = s32[1048576] broadcast(zero), dimensions={}
  o = s32[1048576] broadcast(one), dimensions={}
  eq = pred[1048576] compare(b, z), direction=EQ
  d = s32[1048576] select(eq, o, b)
  ROOT r = s32[1048576] remainder(x, d)
}
)";
  HloConstantFolding pass;
  std::string out = RunPassAndPrint(pass, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK: [[C:%constant.[0-9]+]] = s32[] constant(2)
    CHECK: [[B:%broadcast.[0-9]+]] = s32[1048576]{0} broadcast(s32[] [[C]]), dimensions={}
    CHECK: ROOT {{.*}} remainder({{.*}}, s32[1048576]{0} [[B]])
    CHECK-NOT: select
    CHECK-NOT: compare
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

TEST(ConstantFoldingTest, SizeLimitIsConfigurable) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  v = f32[4] constant({1, 2, 3, 4})
  ROOT n = f32[4] negate(v)
}
)";
  HloConstantFolding small(/*max_elements=*/2);
  bool changed = true;
  RunPassAndPrint(small, kHlo, &changed);
  EXPECT_FALSE(changed);
  HloConstantFolding normal;
  std::string out = RunPassAndPrint(normal, kHlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_FILECHECK(out, "CHECK: ROOT {{.*}} constant({-1, -2, -3, -4})");
}

TEST(ConstantFoldingTest, SkipsWhatTheEvaluatorCannotDo) {
  // A custom call on constants belongs to its device or host handler: left alone, no error.
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  v = f32[4] constant({1, 2, 3, 4})
  ROOT c = f32[4] custom-call(v), custom_call_target="mystery"
}
)";
  HloConstantFolding pass;
  bool changed = true;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_FALSE(changed);
  EXPECT_FILECHECK(out, "CHECK: custom-call(");
}

}  // namespace
}  // namespace kiln
