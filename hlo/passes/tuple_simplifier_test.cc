// Tests of the tuple simplifier.
#include "hlo/passes/tuple_simplifier.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

TEST(TupleSimplifierTest, GetTupleElementOfTupleIsTheOperand) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  p = f32[3] parameter(0)
  q = s32[2] parameter(1)
  t = (f32[3], s32[2]) tuple(p, q)
  a = f32[3] get-tuple-element(t), index=0
  b = s32[2] get-tuple-element(t), index=1
  n = f32[3] negate(a)
  ROOT r = (f32[3], s32[2]) tuple(n, b)
}
)";
  TupleSimplifier pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_FILECHECK(out, R"(
    CHECK-NOT: get-tuple-element
    CHECK: %n = f32[3]{0} negate(f32[3]{0} %p)
    CHECK: ROOT %r = (f32[3]{0}, s32[2]{0}) tuple(f32[3]{0} %n, s32[2]{0} %q)
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

TEST(TupleSimplifierTest, RebuiltTupleIsTheSource) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  p = (f32[3], s32[2]) parameter(0)
  a = f32[3] get-tuple-element(p), index=0
  b = s32[2] get-tuple-element(p), index=1
  ROOT r = (f32[3], s32[2]) tuple(a, b)
}
)";
  TupleSimplifier pass;
  std::string out = RunPassAndPrint(pass, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK: ROOT %p = (f32[3]{0}, s32[2]{0}) parameter(0)
    CHECK-NOT: tuple(
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

TEST(TupleSimplifierTest, PartialOrReorderedTuplesStay) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  p = (f32[3], f32[3], f32[3]) parameter(0)
  a = f32[3] get-tuple-element(p), index=0
  b = f32[3] get-tuple-element(p), index=1
  c = f32[3] get-tuple-element(p), index=2
  swapped = (f32[3], f32[3], f32[3]) tuple(b, a, c)
  partial = (f32[3], f32[3]) tuple(a, b)
  ROOT r = ((f32[3], f32[3], f32[3]), (f32[3], f32[3])) tuple(swapped, partial)
}
)";
  TupleSimplifier pass;
  bool changed = true;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_FALSE(changed) << out;
}

}  // namespace
}  // namespace kiln
