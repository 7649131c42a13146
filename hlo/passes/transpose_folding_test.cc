// Tests of transpose folding into dot and convolution dimension numbers.
#include "hlo/passes/transpose_folding.h"

#include "gtest/gtest.h"
#include "hlo/passes/test_util.h"

namespace kiln {
namespace {

using testing::PassPreservesValues;
using testing::RunPassAndPrint;

TEST(TransposeFoldingTest, FoldsBothDotOperands) {
  // (A^T)(B^T) with A: [K,M], B: [N,K].
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[4,2] parameter(1)
  at = f32[3,2] transpose(a), dimensions={1,0}
  bt = f32[2,4] transpose(b), dimensions={1,0}
  ROOT d = f32[3,4] dot(at, bt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  TransposeFolding pass;
  bool changed = false;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_TRUE(changed);
  EXPECT_FILECHECK(out, R"(
    CHECK-NOT: transpose
    CHECK: ROOT %d = f32[3,4]{1,0} dot(f32[2,3]{1,0} %a, f32[4,2]{1,0} %b), lhs_contracting_dims={0}, rhs_contracting_dims={1}
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

TEST(TransposeFoldingTest, FoldsBatchedDotWhenFreeDimsKeepTheirOrder) {
  // lhs = transpose(x[B,K,M]) -> [B,M,K]: free dim M stays alone, batch 0 stays 0.
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  x = f32[2,5,3] parameter(0)
  y = f32[2,5,4] parameter(1)
  xt = f32[2,3,5] transpose(x), dimensions={0,2,1}
  ROOT d = f32[2,3,4] dot(xt, y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
}
)";
  TransposeFolding pass;
  std::string out = RunPassAndPrint(pass, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK: ROOT %d = {{.*}} dot(f32[2,5,3]{2,1,0} %x, f32[2,5,4]{2,1,0} %y), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

TEST(TransposeFoldingTest, KeepsTransposeThatReordersFreeDims) {
  // lhs free dims (0, 1) would come from x dims (1, 0): the result order would change.
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  x = f32[3,2,5] parameter(0)
  y = f32[5,4] parameter(1)
  xt = f32[2,3,5] transpose(x), dimensions={1,0,2}
  ROOT d = f32[2,3,4] dot(xt, y), lhs_contracting_dims={2}, rhs_contracting_dims={0}
}
)";
  TransposeFolding pass;
  bool changed = true;
  std::string out = RunPassAndPrint(pass, kHlo, &changed);
  EXPECT_FALSE(changed) << out;
}

TEST(TransposeFoldingTest, FoldsIntoConvolutionLabels) {
  // Input given as [b, f, w] transposed to [b, w, f]; kernel [o, i, w] transposed to [w, i, o].
  constexpr std::string_view kHlo = R"(
HloModule m
ENTRY main {
  x = f32[1,2,5] parameter(0)
  k = f32[3,2,2] parameter(1)
  xt = f32[1,5,2] transpose(x), dimensions={0,2,1}
  kt = f32[2,2,3] transpose(k), dimensions={2,1,0}
  ROOT c = f32[1,4,3] convolution(xt, kt), window={size=2}, dim_labels=b0f_0io->b0f
}
)";
  TransposeFolding pass;
  std::string out = RunPassAndPrint(pass, kHlo);
  EXPECT_FILECHECK(out, R"(
    CHECK-NOT: transpose
    CHECK: ROOT %c = {{.*}} convolution(f32[1,2,5]{2,1,0} %x, f32[3,2,2]{2,1,0} %k), window={size=2}, dim_labels=bf0_oi0->b0f
  )");
  EXPECT_TRUE(PassPreservesValues(pass, kHlo));
}

}  // namespace
}  // namespace kiln
