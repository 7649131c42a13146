// Tests of scatter-batching-to-indices: batched scatters (vmap's x.at[i].set(v), a leading or
// a trailing batching dimension, two of them with an implicit index vector, updates of
// several elements per batch) become scatters without batching dimensions whose values agree
// with the evaluator's batched scatter, indices in and out of bounds (-8..8 against
// dimensions of 2 to 7); an unbatched scatter is left alone.
#include "hlo/passes/scatter_batching_to_indices.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// jax.vmap(lambda r, i, v: r.at[i].set(v)) over rows: row b's element i[b] set to v[b] (the
// pivot swap of a batched LU solve).
constexpr std::string_view kSetPerRow = R"(
HloModule m
overwrite {
  a = s32[] parameter(0)
  ROOT b = s32[] parameter(1)
}
ENTRY main {
  x = s32[6,4] parameter(0)
  i = s32[6,1] parameter(1)
  v = s32[6] parameter(2)
  ROOT s = s32[6,4] scatter(x, i, v), update_window_dims={}, inserted_window_dims={1},
      scatter_dims_to_operand_dims={1}, input_batching_dims={0},
      scatter_indices_batching_dims={0}, index_vector_dim=1, indices_are_sorted=true,
      unique_indices=true, to_apply=overwrite
}
)";

// The batch is the operand's last dimension; each update adds a whole window of dimension 1
// at row i[b] of batch b.
constexpr std::string_view kTrailingBatchWindow = R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[5,3,4] parameter(0)
  i = s32[4,1] parameter(1)
  u = f32[4,3] parameter(2)
  ROOT s = f32[5,3,4] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, input_batching_dims={2},
      scatter_indices_batching_dims={0}, index_vector_dim=1, to_apply=add
}
)";

// Two batching dimensions, the index vector implicit (index_vector_dim = rank), and two
// updates per batch element (duplicates added in).
constexpr std::string_view kTwoBatchDimsImplicitVector = R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[3,2,7] parameter(0)
  i = s32[2,3,2] parameter(1)
  u = f32[2,3,2] parameter(2)
  ROOT s = f32[3,2,7] scatter(x, i, u), update_window_dims={}, inserted_window_dims={2},
      scatter_dims_to_operand_dims={2}, input_batching_dims={0,1},
      scatter_indices_batching_dims={1,2}, index_vector_dim=3, to_apply=add
}
)";

TEST(ScatterBatchingToIndicesTest, BatchedScattersLoseTheirBatchingDimensions) {
  for (std::string_view text : {kSetPerRow, kTrailingBatchWindow, kTwoBatchDimsImplicitVector}) {
    ScatterBatchingToIndices pass;
    bool changed = false;
    const std::string out = RunPassAndPrint(pass, text, &changed);
    EXPECT_TRUE(changed) << text;
    EXPECT_EQ(out.find("batching_dims"), std::string::npos) << out;
    EXPECT_FILECHECK(out, R"(
      CHECK: iota(
      CHECK: concatenate(
      CHECK: scatter(
    )");
    EXPECT_TRUE(PassPreservesValues(pass, text, /*trials=*/60)) << text;
  }
}

TEST(ScatterBatchingToIndicesTest, PerRowSetAddressesBatchThenColumn) {
  ScatterBatchingToIndices pass;
  bool changed = false;
  const std::string out = RunPassAndPrint(pass, kSetPerRow, &changed);
  EXPECT_FILECHECK(out, R"(
    CHECK: s32[6,2]{{.*}} concatenate(
    CHECK: inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1
  )");
}

TEST(ScatterBatchingToIndicesTest, UnbatchedScatterStays) {
  constexpr std::string_view kRows = R"(
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
  ScatterBatchingToIndices pass;
  bool changed = true;
  RunPassAndPrint(pass, kRows, &changed);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace kiln
