// Tests of sort-complex-as-parts: sorts of complex operands (JAX's sort_complex comparator, a
// complex key with an integer payload) become sorts of float parts with the evaluator's values
// on random inputs; a comparator that uses a complex parameter whole keeps its sort.
#include "hlo/passes/sort_complex_as_parts.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// jnp.sort_complex's comparator: real parts, then imaginary parts, each NaN- and -0-canonical
// in TOTALORDER.
constexpr const char* kSortComplex = R"(HloModule m
less {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ar = f32[] real(a)
  br = f32[] real(b)
  zero = f32[] constant(0)
  nan = f32[] constant(nan)
  aq = pred[] compare(ar, zero), direction=EQ
  bq = pred[] compare(br, zero), direction=EQ
  ar0 = f32[] select(aq, zero, ar)
  br0 = f32[] select(bq, zero, br)
  lt = pred[] compare(ar0, br0), direction=LT, type=TOTALORDER
  eq = pred[] compare(ar0, br0), direction=EQ, type=TOTALORDER
  ai = f32[] imag(a)
  bi = f32[] imag(b)
  lti = pred[] compare(ai, bi), direction=LT, type=TOTALORDER
  both = pred[] and(eq, lti)
  ROOT r = pred[] or(lt, both)
}
ENTRY main {
  x = c64[3,40] parameter(0)
  ROOT s = c64[3,40] sort(x), dimensions={1}, is_stable=true, to_apply=less
}
)";

bool Changes(const std::string& hlo) {
  SortComplexAsParts pass;
  bool changed = false;
  RunPassAndPrint(pass, hlo, &changed);
  return changed;
}

TEST(SortComplexAsParts, SortComplexSortsFloatParts) {
  SortComplexAsParts pass;
  EXPECT_FILECHECK(RunPassAndPrint(pass, kSortComplex), R"(
CHECK: less.parts
CHECK-NOT: c64
CHECK: ENTRY
CHECK-DAG: f32[3,40]{1,0} real(
CHECK-DAG: f32[3,40]{1,0} imag(
CHECK: (f32[3,40]{1,0}, f32[3,40]{1,0}) sort({{.*}}), dimensions={1}, is_stable=true, to_apply=%less.parts
CHECK: ROOT {{.*}} c64[3,40]{1,0} complex(
)");
  for (unsigned seed : {1u, 2u})
    EXPECT_TRUE(PassPreservesValues(pass, kSortComplex, 2, seed, testing::Agreement::kExact));
}

// A complex key first and an s32 payload: the payload keeps its place after the two parts.
TEST(SortComplexAsParts, KeyWithAPayload) {
  SortComplexAsParts pass;
  const std::string hlo = R"(HloModule m
less {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ai = f32[] imag(a)
  bi = f32[] imag(b)
  ROOT r = pred[] compare(ai, bi), direction=GT, type=TOTALORDER
}
ENTRY main {
  x = c64[50] parameter(0)
  p = s32[50] parameter(1)
  ROOT s = (c64[50], s32[50]) sort(x, p), dimensions={0}, is_stable=true, to_apply=less
}
)";
  EXPECT_FILECHECK(RunPassAndPrint(pass, hlo), R"(
CHECK: (f32[50]{0}, f32[50]{0}, s32[50]{0}) sort(
CHECK: ROOT {{.*}} tuple(
)");
  for (unsigned seed : {1u, 2u})
    EXPECT_TRUE(PassPreservesValues(pass, hlo, 2, seed, testing::Agreement::kExact));
}

// A comparator taking abs() of its complex parameters keeps its sort, and a sort without
// complex operands is not touched.
TEST(SortComplexAsParts, OthersStay) {
  EXPECT_FALSE(Changes(R"(HloModule m
less {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  aa = f32[] abs(a)
  ba = f32[] abs(b)
  ROOT r = pred[] compare(aa, ba), direction=LT
}
ENTRY main {
  x = c64[50] parameter(0)
  ROOT s = c64[50] sort(x), dimensions={0}, to_apply=less
}
)"));
  EXPECT_FALSE(Changes(R"(HloModule m
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[50] parameter(0)
  ROOT s = f32[50] sort(x), dimensions={0}, to_apply=less
}
)"));
}

}  // namespace
}  // namespace kiln
