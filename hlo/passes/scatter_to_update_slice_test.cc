// Tests of scatter-to-update-slice: one-window scatters become dynamic-update-slices with the
// same values in and out of bounds (indices -8..8 against dimensions of 3 to 7 cover both);
// several windows and unknown combiners stay scatters.
#include "hlo/passes/scatter_to_update_slice.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// x.at[i].set(v) as JAX lowers it: a row of f32[6,5] at index i.
constexpr std::string_view kSetRow = R"(
HloModule m
overwrite {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY main {
  x = f32[6,5] parameter(0)
  i = s32[1] parameter(1)
  v = f32[5] parameter(2)
  ROOT s = f32[6,5] scatter(x, i, v), update_window_dims={0}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=0, indices_are_sorted=true,
      unique_indices=true, to_apply=overwrite
}
)";

// A 2x3 window of f32[4,9,8] at (j, k) of the last two dimensions, added in; the index
// vector is the last dimension of s32[1,2], the updates' first dimension the scatter's.
constexpr std::string_view kAddWindow = R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,9,8] parameter(0)
  jk = s32[1,2] parameter(1)
  u = f32[1,4,2,3] parameter(2)
  ROOT s = f32[4,9,8] scatter(x, jk, u), update_window_dims={1,2,3}, inserted_window_dims={},
      scatter_dims_to_operand_dims={1,2}, index_vector_dim=1, to_apply=add
}
)";

// current - update: the combiner's operand order matters.
constexpr std::string_view kSubtractScalarIndex = R"(
HloModule m
sub {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] subtract(a, b)
}
ENTRY main {
  x = s32[3,4] parameter(0)
  i = s32[] parameter(1)
  v = s32[4] parameter(2)
  ROOT s = s32[3,4] scatter(x, i, v), update_window_dims={0}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=sub
}
)";

TEST(ScatterToUpdateSliceTest, OverwriteOfOneRow) {
  ScatterToUpdateSlice pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kSetRow, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("scatter("), std::string::npos) << out;
  EXPECT_FILECHECK(out, R"(
    CHECK: dynamic-slice(
    CHECK: select(
    CHECK: ROOT {{.*}} dynamic-update-slice(
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kSetRow, /*trials=*/60));
}

TEST(ScatterToUpdateSliceTest, AddedWindowAtTwoIndices) {
  ScatterToUpdateSlice pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kAddWindow, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("scatter("), std::string::npos) << out;
  EXPECT_TRUE(PassPreservesValues(pass, kAddWindow, /*trials=*/100));
}

TEST(ScatterToUpdateSliceTest, SubtractAtScalarIndex) {
  ScatterToUpdateSlice pass;
  bool changed = false;
  RunPassAndPrint(pass, kSubtractScalarIndex, &changed);
  EXPECT_TRUE(changed);
  EXPECT_TRUE(PassPreservesValues(pass, kSubtractScalarIndex, /*trials=*/60));
}

TEST(ScatterToUpdateSliceTest, SeveralWindowsAndOtherCombinersStay) {
  // Two rows at two indices.
  constexpr std::string_view kTwoRows = R"(
HloModule m
overwrite {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY main {
  x = f32[6,5] parameter(0)
  i = s32[2,1] parameter(1)
  v = f32[2,5] parameter(2)
  ROOT s = f32[6,5] scatter(x, i, v), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=overwrite
}
)";
  // update - current: not a combiner the pass writes as current (op) update.
  constexpr std::string_view kReversed = R"(
HloModule m
rsub {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] subtract(b, a)
}
ENTRY main {
  x = f32[6,5] parameter(0)
  i = s32[1] parameter(1)
  v = f32[5] parameter(2)
  ROOT s = f32[6,5] scatter(x, i, v), update_window_dims={0}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=rsub
}
)";
  for (std::string_view text : {kTwoRows, kReversed}) {
    ScatterToUpdateSlice pass;
    bool changed = true;
    std::string out = RunPassAndPrint(pass, text, &changed);
    EXPECT_FALSE(changed) << out;
    EXPECT_NE(out.find("scatter("), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace kiln
