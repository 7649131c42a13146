// Tests of common subexpression elimination.
#include "hlo/passes/cse.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

TEST(CseTest, MergesIdenticalInstructionsAndConstantsByValue) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  c1 = f32[] constant(2)
  c2 = f32[] constant(2)
  b1 = f32[4] broadcast(c1), dimensions={}
  b2 = f32[4] broadcast(c2), dimensions={}
  m1 = f32[4] multiply(p, b1)
  m2 = f32[4] multiply(p, b2)
  ROOT s = f32[4] add(m1, m2)
}
)";
  HloCSE cse;
  bool changed = false;
  std::string out = RunPassAndPrint(cse, kHlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_FILECHECK(out, R"(
    CHECK: [[C:%c[12]]] = f32[] constant(2)
    CHECK-NOT: constant(2)
    CHECK: [[B:%b[12]]] = f32[4]{0} broadcast(f32[] [[C]])
    CHECK-NOT: broadcast
    CHECK: [[M:%m[12]]] = f32[4]{0} multiply(f32[4]{0} %p, f32[4]{0} [[B]])
    CHECK-NOT: multiply
    CHECK: ROOT %s = f32[4]{0} add(f32[4]{0} [[M]], f32[4]{0} [[M]])
  )");
  EXPECT_TRUE(PassPreservesValues(cse, kHlo));
}

TEST(CseTest, KeepsDifferentAttributesOperandsAndValues) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  p = f32[2,3] parameter(0)
  q = f32[2,3] parameter(1)
  c1 = f32[] constant(0)
  c2 = f32[] constant(-0)
  a1 = f32[2,3] add(p, q)
  a2 = f32[2,3] add(q, p)
  t1 = f32[3,2] transpose(a1), dimensions={1,0}
  s1 = f32[1,3] slice(a1), slice={[0:1], [0:3]}
  s2 = f32[1,3] slice(a1), slice={[1:2], [0:3]}
  ROOT r = (f32[], f32[], f32[2,3], f32[3,2], f32[1,3], f32[1,3]) tuple(c1, c2, a2, t1, s1, s2)
}
)";
  HloCSE cse;
  bool changed = true;
  std::string out = RunPassAndPrint(cse, kHlo, &changed);
  EXPECT_FALSE(changed) << out;
}

TEST(CseTest, NeverMergesRandomOrSideEffects) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r1 = f32[4] rng(lo, hi), distribution=rng_uniform
  r2 = f32[4] rng(lo, hi), distribution=rng_uniform
  c1 = f32[4] custom-call(r1), custom_call_target="f", custom_call_has_side_effect=true
  c2 = f32[4] custom-call(r1), custom_call_target="f", custom_call_has_side_effect=true
  ROOT t = (f32[4], f32[4], f32[4], f32[4]) tuple(r1, r2, c1, c2)
}
)";
  HloCSE cse;
  std::string out = RunPassAndPrint(cse, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK: %r1 = {{.*}} rng(
    CHECK: %r2 = {{.*}} rng(
    CHECK: %c1 = {{.*}} custom-call(
    CHECK: %c2 = {{.*}} custom-call(
  )");
}

// Custom calls without custom_call_has_side_effect are pure, as XLA reads them: two SVDs of
// one matrix (jnp.linalg.norm(a, 2) and matrix_rank(a)) become one; another target or
// another backend_config stays apart.
TEST(CseTest, MergesPureCustomCalls) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  a = f32[4,4] parameter(0)
  s1 = (f32[4,4], f32[4], f32[4,4], f32[4,4], s32[]) custom-call(a), custom_call_target="lapack_sgesdd_ffi", backend_config={mode = 78 : ui8}
  s2 = (f32[4,4], f32[4], f32[4,4], f32[4,4], s32[]) custom-call(a), custom_call_target="lapack_sgesdd_ffi", backend_config={mode = 78 : ui8}
  s3 = (f32[4,4], f32[4], f32[4,4], f32[4,4], s32[]) custom-call(a), custom_call_target="lapack_sgesdd_ffi", backend_config={mode = 65 : ui8}
  g1 = f32[4] get-tuple-element(s1), index=1
  g2 = f32[4] get-tuple-element(s2), index=1
  g3 = f32[4] get-tuple-element(s3), index=1
  o = f32[4] custom-call(a), custom_call_target="other"
  ROOT t = (f32[4], f32[4], f32[4], f32[4]) tuple(g1, g2, g3, o)
}
)";
  HloCSE cse;
  std::string out = RunPassAndPrint(cse, kHlo);
  size_t svds = 0;
  for (size_t at = out.find("lapack_sgesdd_ffi"); at != std::string::npos;
       at = out.find("lapack_sgesdd_ffi", at + 1))
    ++svds;
  EXPECT_EQ(svds, 2u) << out;  // s1 (s2 merged into it) and s3
  EXPECT_NE(out.find("custom_call_target=\"other\""), std::string::npos) << out;
  EXPECT_NE(out.find("mode = 65"), std::string::npos) << out;
}

TEST(CseTest, MergesReducesWithEquivalentReducers) {
  constexpr std::string_view kHlo = R"(
HloModule m
add1 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
add2 {
  a2 = f32[] parameter(0)
  b2 = f32[] parameter(1)
  ROOT t2 = f32[] add(a2, b2)
}
mul {
  a3 = f32[] parameter(0)
  b3 = f32[] parameter(1)
  ROOT t3 = f32[] multiply(a3, b3)
}
ENTRY main {
  p = f32[4,5] parameter(0)
  z = f32[] constant(0)
  r1 = f32[4] reduce(p, z), dimensions={1}, to_apply=add1
  r2 = f32[4] reduce(p, z), dimensions={1}, to_apply=add2
  r3 = f32[4] reduce(p, z), dimensions={1}, to_apply=mul
  ROOT t = (f32[4], f32[4], f32[4]) tuple(r1, r2, r3)
}
)";
  HloCSE cse;
  std::string out = RunPassAndPrint(cse, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK: ENTRY
    CHECK: [[R:%r[12]]] = f32[4]{0} reduce(
    CHECK-NOT: to_apply=%add
    CHECK: %r3 = {{.*}} to_apply=%mul
    CHECK: ROOT {{.*}} tuple({{.*}} [[R]], {{.*}} [[R]], {{.*}} %r3)
  )");
}

TEST(CseTest, CascadesThroughUsers) {
  // After merging e1/e2, their users n1/n2 become identical too.
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  p = s32[8] parameter(0)
  e1 = s32[8] multiply(p, p)
  e2 = s32[8] multiply(p, p)
  n1 = s32[8] negate(e1)
  n2 = s32[8] negate(e2)
  ROOT s = s32[8] subtract(n1, n2)
}
)";
  HloCSE cse;
  std::string out = RunPassAndPrint(cse, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK: multiply
    CHECK-NOT: multiply
    CHECK: [[N:%n[12]]] = s32[8]{0} negate
    CHECK-NOT: negate
    CHECK: ROOT {{.*}} subtract(s32[8]{0} [[N]], s32[8]{0} [[N]])
  )");
  EXPECT_TRUE(PassPreservesValues(cse, kHlo));
}

}  // namespace
}  // namespace kiln
