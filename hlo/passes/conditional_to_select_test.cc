// Tests of conditional-to-select: cheap branches (a lax.cond in a scan step, as JAX lowers it:
// an s32 index and tuple operands) become selects that give the evaluator's values, with
// indices in range, out of range and negative; a pred selector; tuple results; branches that
// are not cheap (a reduce, an array too large) stay a conditional.
#include "hlo/passes/conditional_to_select.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// Three branches by an index in [-3, 3] (3 and the negatives run the last one), each reading
// its tuple operand; the result a tuple of a scalar and an f32[4].
constexpr char kIndexed[] = R"(
HloModule indexed
b0 {
  p = (f32[], f32[4]) parameter(0)
  c = f32[] get-tuple-element(p), index=0
  v = f32[4] get-tuple-element(p), index=1
  k = f32[] constant(0.99)
  m = f32[] multiply(c, k)
  mb = f32[4] broadcast(m), dimensions={}
  w = f32[4] add(v, mb)
  ROOT t = (f32[], f32[4]) tuple(m, w)
}
b1 {
  p = (f32[], f32[4]) parameter(0)
  c = f32[] get-tuple-element(p), index=0
  v = f32[4] get-tuple-element(p), index=1
  n = f32[] negate(c)
  ROOT t = (f32[], f32[4]) tuple(n, v)
}
b2 {
  p = (f32[], f32[4]) parameter(0)
  v = f32[4] get-tuple-element(p), index=1
  e = f32[4] exponential(v)
  c = f32[] get-tuple-element(p), index=0
  ROOT t = (f32[], f32[4]) tuple(c, e)
}
ENTRY main {
  i = s32[] parameter(0)
  c = f32[] parameter(1)
  v = f32[4] parameter(2)
  four = s32[] constant(4)
  r = s32[] remainder(i, four)
  a = (f32[], f32[4]) tuple(c, v)
  ROOT k = (f32[], f32[4]) conditional(r, a, a, a), branch_computations={b0, b1, b2}
}
)";

// lax.cond's pred form, f32 scalars, inside a while body.
constexpr char kPredInLoop[] = R"(
HloModule pred_loop
yes {
  p = f32[] parameter(0)
  k = f32[] constant(0.5)
  ROOT m = f32[] multiply(p, k)
}
no {
  p = f32[] parameter(0)
  k = f32[] constant(1)
  ROOT s = f32[] subtract(p, k)
}
cond {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(20)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[] get-tuple-element(s), index=1
  z = f32[] constant(0)
  pos = pred[] compare(x, z), direction=GT
  y = f32[] conditional(pos, x, x), true_computation=yes, false_computation=no
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[]) tuple(j, y)
}
ENTRY main {
  x = f32[] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[]) tuple(zero, x)
  ROOT w = (s32[], f32[]) while(init), condition=cond, body=body
}
)";

TEST(ConditionalToSelect, IndexedBranchesBecomeSelects) {
  ConditionalToSelect pass;
  bool changed = false;
  const std::string out = RunPassAndPrint(pass, kIndexed, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("conditional("), std::string::npos) << out;
  EXPECT_NE(out.find("select("), std::string::npos) << out;
  for (unsigned seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u})
    EXPECT_TRUE(PassPreservesValues(pass, kIndexed, 3, seed));
}

TEST(ConditionalToSelect, PredBranchesInALoopBody) {
  ConditionalToSelect pass;
  bool changed = false;
  const std::string out = RunPassAndPrint(pass, kPredInLoop, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("conditional("), std::string::npos) << out;
  for (unsigned seed : {1u, 2u, 3u, 4u})
    EXPECT_TRUE(PassPreservesValues(pass, kPredInLoop, 3, seed));
}

TEST(ConditionalToSelect, CostlyBranchesStay) {
  ConditionalToSelect pass;
  // A reduce in a branch, and a branch over an array larger than kMaxElements.
  const std::string reduce = R"(
HloModule costly
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
b0 {
  p = f32[8] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add
}
b1 {
  p = f32[8] parameter(0)
  ROOT c = f32[] constant(1)
}
ENTRY main {
  q = pred[] parameter(0)
  v = f32[8] parameter(1)
  ROOT k = f32[] conditional(q, v, v), true_computation=b0, false_computation=b1
}
)";
  const std::string large = R"(
HloModule large
b0 {
  p = f32[1024] parameter(0)
  ROOT n = f32[1024] negate(p)
}
b1 {
  ROOT p = f32[1024] parameter(0)
}
ENTRY main {
  q = pred[] parameter(0)
  v = f32[1024] parameter(1)
  ROOT k = f32[1024] conditional(q, v, v), true_computation=b0, false_computation=b1
}
)";
  for (const std::string& text : {reduce, large}) {
    bool changed = true;
    const std::string out = RunPassAndPrint(pass, text, &changed);
    EXPECT_FALSE(changed) << out;
    EXPECT_NE(out.find("conditional("), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace kiln
