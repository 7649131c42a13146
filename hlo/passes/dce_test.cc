// Tests of dead code elimination: HLO text in, printed module checked, values preserved.
#include "hlo/passes/dce.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

TEST(DceTest, RemovesDeadChainKeepsLiveCode) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  dead1 = f32[4] multiply(p0, p1)
  dead2 = f32[4] negate(dead1)
  live = f32[4] add(p0, p1)
  ROOT r = f32[4] exponential(live)
}
)";
  HloDCE dce;
  bool changed = false;
  std::string out = RunPassAndPrint(dce, kHlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_FILECHECK(out, R"(
    CHECK: parameter(0)
    CHECK: parameter(1)
    CHECK-NOT: multiply
    CHECK-NOT: negate
    CHECK: add(
    CHECK: ROOT {{.*}} exponential(
  )");
  EXPECT_TRUE(PassPreservesValues(dce, kHlo));
}

TEST(DceTest, KeepsSideEffectsParametersAndRoot) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  p0 = f32[4] parameter(0)
  unused_param = f32[4] parameter(1)
  cc = f32[4] custom-call(p0), custom_call_target="foo", custom_call_has_side_effect=true
  pure = f32[4] custom-call(p0), custom_call_target="bar"
  rng_lo = f32[] constant(0)
  rng_hi = f32[] constant(1)
  r = f32[4] rng(rng_lo, rng_hi), distribution=rng_uniform
  tok = token[] after-all()
  outf = token[] outfeed(p0, tok)
  ar = f32[4] all-reduce(p0), channel_id=1, replica_groups={}, to_apply=add
  ROOT n = f32[4] negate(p0)
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
)";
  HloDCE dce;
  bool changed = false;
  std::string out = RunPassAndPrint(dce, kHlo, &changed);
  EXPECT_TRUE(changed) << out;  // the unused custom call without side effects goes
  EXPECT_EQ(out.find("\"bar\""), std::string::npos) << out;
  // The printer lists what the root reaches first, then the rest in text order.
  EXPECT_FILECHECK(out, R"(
    CHECK: ROOT {{.*}} negate(
    CHECK: parameter(1)
    CHECK: custom-call(
    CHECK: rng(
    CHECK: outfeed(
    CHECK: all-reduce(
  )");
}

TEST(DceTest, RemovesCollectiveWithoutChannelAndUnusedComputations) {
  constexpr std::string_view kHlo = R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
unused {
  a = f32[] parameter(0)
  ROOT b = f32[] negate(a)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  ar = f32[4] all-reduce(p0), replica_groups={}, to_apply=add
  ROOT n = f32[4] negate(p0)
}
)";
  HloDCE dce;
  std::string out = RunPassAndPrint(dce, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK-NOT: all-reduce
    CHECK-NOT: unused
    CHECK-NOT: %add
    CHECK: ENTRY
    CHECK: ROOT {{.*}} negate(
  )");
}

TEST(DceTest, CleansInsideCalledComputationsKeepingTheirParameters) {
  constexpr std::string_view kHlo = R"(
HloModule m
body {
  bp = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(bp), index=0
  v = f32[3] get-tuple-element(bp), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  waste = f32[3] multiply(v, v)
  ROOT t = (s32[], f32[3]) tuple(next, v)
}
cond {
  cp = (s32[], f32[3]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  unused_cmp = pred[] compare(ci, ci), direction=NE
  limit = s32[] constant(3)
  ROOT lt = pred[] compare(ci, limit), direction=LT
}
ENTRY main {
  p = f32[3] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[3]) tuple(zero, p)
  w = (s32[], f32[3]) while(init), condition=cond, body=body
  ROOT out = f32[3] get-tuple-element(w), index=1
}
)";
  HloDCE dce;
  std::string out = RunPassAndPrint(dce, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK: body
    CHECK-NOT: multiply
    CHECK: ROOT {{.*}} tuple(
    CHECK: cond
    CHECK-NOT: direction=NE
    CHECK: direction=LT
    CHECK: while(
  )");
  EXPECT_TRUE(PassPreservesValues(dce, kHlo));
}

}  // namespace
}  // namespace kiln
