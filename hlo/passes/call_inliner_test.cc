// Tests of call inlining: no call is left, nested callees are inlined too, values preserved.
#include "hlo/passes/call_inliner.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

constexpr std::string_view kNested = R"(
HloModule m
relu {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  zb = f32[4] broadcast(z), dimensions={}
  ROOT r = f32[4] maximum(x, zb)
}
layer {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  s = f32[4] add(a, b)
  ROOT y = f32[4] call(s), to_apply=relu
}
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  l1 = f32[4] call(p0, p1), to_apply=layer
  n = f32[4] negate(l1)
  ROOT l2 = f32[4] call(n, p1), to_apply=layer
}
)";

TEST(CallInlinerTest, InlinesNestedCallsAndRootCall) {
  CallInliner pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kNested, &changed);
  EXPECT_TRUE(changed);
  // The entry holds the callees' arithmetic twice and calls nothing.
  const std::string entry = out.substr(out.find("ENTRY"));
  EXPECT_EQ(entry.find("call("), std::string::npos) << out;
  EXPECT_FILECHECK(entry, R"(
    CHECK: add(
    CHECK: maximum(
    CHECK: negate(
    CHECK: add(
    CHECK: ROOT {{.*}} maximum(
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kNested));
}

TEST(CallInlinerTest, LeavesModulesWithoutCallsAlone) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  ROOT e = f32[4] exponential(p)
}
)";
  CallInliner pass;
  bool changed = true;
  RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace kiln
