// Tests of scatter-indexed-dimensions-first: scatters indexing trailing dimensions run on
// transposed operands that lead with them, with the evaluator's values (duplicate indices and
// one out of range included); row-form scatters, partial windows and what the predicate
// refuses stay.
#include "hlo/passes/scatter_indexed_dimensions_first.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

constexpr const char* kAdd =
    "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n}\n";

// x.at[:, idx].add(v) of an overlap-add: f32[4,10] indexed along dimension 1.
const std::string kColumns = std::string(kAdd) + R"(ENTRY main {
  x = f32[4,10] parameter(0)
  v = f32[4,6] parameter(1)
  i = s32[6,1] constant({ {3}, {0}, {9}, {3}, {12}, {4} })
  ROOT s = f32[4,10] scatter(x, i, v), update_window_dims={0}, inserted_window_dims={1},
    scatter_dims_to_operand_dims={1}, index_vector_dim=1, to_apply=add
}
)";

bool Changes(ScatterIndexedDimensionsFirst& pass, const std::string& hlo) {
  bool changed = false;
  RunPassAndPrint(pass, hlo, &changed);
  return changed;
}

TEST(ScatterIndexedDimensionsFirst, ColumnsOfABatch) {
  ScatterIndexedDimensionsFirst pass;
  EXPECT_FILECHECK(RunPassAndPrint(pass, kColumns), R"(
CHECK: [[T:[^ ]+]] = f32[10,4]{1,0} transpose({{.*}}x{{.*}}), dimensions={1,0}
CHECK: [[U:[^ ]+]] = f32[6,4]{1,0} transpose({{.*}}v{{.*}}), dimensions={1,0}
CHECK: [[S:[^ ]+]] = f32[10,4]{1,0} scatter({{.*}} [[T]], {{.*}}, {{.*}} [[U]]), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1
CHECK: ROOT {{.*}} f32[4,10]{1,0} transpose({{.*}} [[S]]), dimensions={1,0}
)");
  for (unsigned seed : {1u, 2u})
    EXPECT_TRUE(PassPreservesValues(pass, kColumns, 2, seed, testing::Agreement::kExact));
}

// Two indexed dimensions given in the order (2, 0) around a window dimension: the operand
// leads with 2, then 0, then the window.
TEST(ScatterIndexedDimensionsFirst, TwoIndexedDimensionsInIndexOrder) {
  ScatterIndexedDimensionsFirst pass;
  const std::string hlo = std::string(kAdd) + R"(ENTRY main {
  x = f32[3,5,7] parameter(0)
  v = f32[4,5] parameter(1)
  i = s32[4,2] constant({ {6, 2}, {0, 0}, {6, 2}, {3, 1} })
  ROOT s = f32[3,5,7] scatter(x, i, v), update_window_dims={1}, inserted_window_dims={0,2},
    scatter_dims_to_operand_dims={2,0}, index_vector_dim=1, to_apply=add
}
)";
  EXPECT_FILECHECK(RunPassAndPrint(pass, hlo), R"(
CHECK: f32[7,3,5]{2,1,0} transpose({{.*}}), dimensions={2,0,1}
CHECK: scatter({{.*}}), update_window_dims={1}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1
CHECK: ROOT {{.*}} f32[3,5,7]{2,1,0} transpose({{.*}}), dimensions={1,2,0}
)");
  for (unsigned seed : {1u, 2u})
    EXPECT_TRUE(PassPreservesValues(pass, hlo, 2, seed, testing::Agreement::kExact));
}

// Row form already, a window narrower than its dimension, and a scatter the predicate refuses
// stay as they are.
TEST(ScatterIndexedDimensionsFirst, OthersStay) {
  ScatterIndexedDimensionsFirst pass;
  EXPECT_FALSE(Changes(pass, std::string(kAdd) + R"(ENTRY main {
  x = f32[10,4] parameter(0)
  v = f32[6,4] parameter(1)
  i = s32[6,1] constant({ {3}, {0}, {9}, {3}, {1}, {4} })
  ROOT s = f32[10,4] scatter(x, i, v), update_window_dims={1}, inserted_window_dims={0},
    scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
)"));
  EXPECT_FALSE(Changes(pass, std::string(kAdd) + R"(ENTRY main {
  x = f32[4,10] parameter(0)
  v = f32[2,6] parameter(1)
  i = s32[6,1] constant({ {3}, {0}, {9}, {3}, {1}, {4} })
  ROOT s = f32[4,10] scatter(x, i, v), update_window_dims={0}, inserted_window_dims={1},
    scatter_dims_to_operand_dims={1}, index_vector_dim=1, to_apply=add
}
)"));
  ScatterIndexedDimensionsFirst refusing([](const HloInstruction&) { return false; });
  EXPECT_FALSE(Changes(refusing, kColumns));
}

}  // namespace
}  // namespace kiln
