// Tests of reduce-kept-dimension-first: reduces over dimension 0 that keep two dimensions or
// more read their operand through a transpose leading with the first kept one, with the
// evaluator's values on random inputs; other reduces, and those the predicates turn away,
// stay.
#include "hlo/passes/reduce_kept_dimension_first.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// A module summing p0 (f32`in`) over `dims` to f32`out`.
std::string Sum(const std::string& in, const std::string& out, const std::string& dims) {
  return "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
         "  ROOT s = f32[] add(a, b)\n}\nENTRY main {\n  x = f32" +
         in + " parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32" + out +
         " reduce(x, z), dimensions={" + dims + "}, to_apply=add\n}\n";
}

bool Changes(ReduceKeptDimensionFirst& pass, const std::string& hlo) {
  bool changed = false;
  RunPassAndPrint(pass, hlo, &changed);
  return changed;
}

// The mean of a scan's stacked outputs: f32[20,3,16] over {0} becomes f32[3,20,16] over {1}.
TEST(ReduceKeptDimensionFirst, StackedOutputsOverTheirSteps) {
  ReduceKeptDimensionFirst pass;
  const std::string hlo = Sum("[20,3,16]", "[3,16]", "0");
  EXPECT_FILECHECK(RunPassAndPrint(pass, hlo), R"(
CHECK: f32[3,20,16]{2,1,0} transpose({{.*}}), dimensions={1,0,2}
CHECK: ROOT {{.*}} f32[3,16]{1,0} reduce({{.*}}), dimensions={1}
)");
  for (unsigned seed : {1u, 2u})
    EXPECT_TRUE(PassPreservesValues(pass, hlo, 2, seed, testing::Agreement::kExact));
}

// Reduced dimensions around and after the first kept one move with it.
TEST(ReduceKeptDimensionFirst, SeveralReducedDimensions) {
  ReduceKeptDimensionFirst pass;
  const std::string hlo = Sum("[4,5,3,6,7]", "[3,7]", "0,1,3");
  EXPECT_FILECHECK(RunPassAndPrint(pass, hlo), R"(
CHECK: f32[3,4,5,6,7]{4,3,2,1,0} transpose({{.*}}), dimensions={2,0,1,3,4}
CHECK: ROOT {{.*}} reduce({{.*}}), dimensions={1,2,3}
)");
  for (unsigned seed : {1u, 2u})
    EXPECT_TRUE(PassPreservesValues(pass, hlo, 2, seed, testing::Agreement::kExact));
}

// Dimension 0 kept, a single kept dimension (the transpose would be a strided row read),
// another layout, and what the predicates refuse stay.
TEST(ReduceKeptDimensionFirst, OtherReducesStay) {
  ReduceKeptDimensionFirst pass;
  EXPECT_FALSE(Changes(pass, Sum("[4,3,8]", "[4,8]", "1")));
  EXPECT_FALSE(Changes(pass, Sum("[20,16]", "[16]", "0")));
  EXPECT_FALSE(Changes(pass, Sum("[20,16,4]", "[16]", "0,2")));
  EXPECT_FALSE(Changes(pass, Sum("[20,3,16]{0,1,2}", "[3,16]", "0")));
  ReduceKeptDimensionFirst refuses([](const HloInstruction&) { return false; });
  EXPECT_FALSE(Changes(refuses, Sum("[20,3,16]", "[3,16]", "0")));
  ReduceKeptDimensionFirst keeps(nullptr, [](const HloInstruction&) { return true; });
  EXPECT_FALSE(Changes(keeps, Sum("[20,3,16]", "[3,16]", "0")));
  // The accepting predicate sees the new reduce.
  ReduceKeptDimensionFirst sees(
      [](const HloInstruction& r) { return r.dimensions() == std::vector<int64_t>{1}; });
  EXPECT_TRUE(Changes(sees, Sum("[20,3,16]", "[3,16]", "0")));
}

}  // namespace
}  // namespace kiln
