// Tests of dot canonicalization: which operands get a transpose, the new dimension numbers,
// and values unchanged (the evaluator on random inputs, before and after).
#include "hlo/passes/dot_canonicalization.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"
#include "hlo/passes/transpose_folding.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

// q @ k^T of attention after transpose folding: batch dims {0,2} on both sides.
constexpr std::string_view kAttentionScores = R"(
HloModule m
ENTRY main {
  q = f32[2,5,3,4] parameter(0)
  k = f32[2,5,3,4] parameter(1)
  ROOT s = f32[2,3,5,5] dot(q, k), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
}
)";

TEST(DotCanonicalizationTest, TransposesOperandsWithBatchDimsNotLeading) {
  DotCanonicalization pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kAttentionScores, &changed);
  EXPECT_TRUE(changed);
  EXPECT_FILECHECK(out, R"(
    CHECK-DAG: f32[2,3,5,4]{3,2,1,0} transpose(f32[2,5,3,4]{3,2,1,0} %q), dimensions={0,2,1,3}
    CHECK-DAG: f32[2,3,4,5]{3,2,1,0} transpose(f32[2,5,3,4]{3,2,1,0} %k), dimensions={0,2,3,1}
    CHECK: lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kAttentionScores));
}

TEST(DotCanonicalizationTest, UndoesTransposeFoldingThatBrokeTheGemmForm) {
  // attention weights @ v, with v's transpose folded in: rhs batch {0,2}, contracting 1.
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  p = f32[2,3,5,5] parameter(0)
  v = f32[2,5,3,4] parameter(1)
  vt = f32[2,3,5,4] transpose(v), dimensions={0,2,1,3}
  ROOT o = f32[2,3,5,4] dot(p, vt), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
}
)";
  TransposeFolding folding;
  bool changed = false;
  const std::string folded = RunPassAndPrint(folding, kHlo, &changed);
  ASSERT_TRUE(changed);
  ASSERT_EQ(folded.find("transpose("), std::string::npos) << folded;
  DotCanonicalization pass;
  std::string out = RunPassAndPrint(pass, folded, &changed);
  EXPECT_TRUE(changed);
  EXPECT_FILECHECK(out, R"(
    CHECK: transpose(f32[2,5,3,4]{3,2,1,0} %v), dimensions={0,2,1,3}
    CHECK: lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  )");
  EXPECT_TRUE(PassPreservesValues(pass, folded));
}

TEST(DotCanonicalizationTest, LeavesGemmReadableDotsAndSmallOnesAlone) {
  // Both operands transposed-but-readable (contracting first / last): a GEMM reads them.
  constexpr std::string_view kReadable = R"(
HloModule m
ENTRY main {
  a = f32[7,3,4] parameter(0)
  b = f32[6,7] parameter(1)
  ROOT d = f32[3,4,6] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={1}
}
)";
  DotCanonicalization pass;
  bool changed = true;
  RunPassAndPrint(pass, kReadable, &changed);
  EXPECT_FALSE(changed);
  DotCanonicalization large_only(1000);  // the attention dot has 2*3*5*5*4 = 600
  RunPassAndPrint(large_only, kAttentionScores, &changed);
  EXPECT_FALSE(changed);
}

TEST(DotCanonicalizationTest, ContractingDimBetweenFreeOnesMovesLast) {
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  a = f32[3,7,4] parameter(0)
  b = f32[7,6] parameter(1)
  ROOT d = f32[3,4,6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  DotCanonicalization pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_FILECHECK(out, R"(
    CHECK: f32[3,4,7]{2,1,0} transpose(f32[3,7,4]{2,1,0} %a), dimensions={0,2,1}
    CHECK: lhs_contracting_dims={2}, rhs_contracting_dims={0}
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

TEST(DotCanonicalizationTest, SeveralContractingDimsBecomeAdjacentInListedOrder) {
  // The lhs contracts {2,0} (apart and out of order), the rhs {0,1} (a GEMM reads it: a
  // weight gradient's x[b,s,d] and g[b,s,e] over {b,s} is left alone).
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  a = f32[5,4,3] parameter(0)
  b = f32[3,5,6] parameter(1)
  ROOT d = f32[4,6] dot(a, b), lhs_contracting_dims={2,0}, rhs_contracting_dims={0,1}
}
)";
  DotCanonicalization pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_FILECHECK(out, R"(
    CHECK: f32[4,3,5]{2,1,0} transpose(f32[5,4,3]{2,1,0} %a), dimensions={1,2,0}
    CHECK: lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
  constexpr std::string_view kWeightGradient = R"(
HloModule m
ENTRY main {
  x = f32[2,5,4] parameter(0)
  g = f32[2,5,6] parameter(1)
  ROOT d = f32[4,6] dot(x, g), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
}
)";
  RunPassAndPrint(pass, kWeightGradient, &changed);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace kiln
